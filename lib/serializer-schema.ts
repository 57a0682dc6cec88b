// A response schema as fast-json-stringify is given it (plugins/http/schema-compilers.ts). For an
// `anyOf`, fast-json-stringify asks Ajv which option a value matches, option after option, for
// every value it writes; to do so it compiles the route's whole response schema in an Ajv of its
// own at the first answer (about 34 ms of CPU for the discussions' listing, whose nullable fields
// are each an `anyOf` with null). A `type` list it decides by itself, from the value's JavaScript
// type. So an `anyOf` whose options are each of one `type`, no two of the same, and say nothing
// else to each other, is written as one schema with the list of their types and the keywords of
// each (`{ anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] }` becomes
// `{ type: ['null', 'string'], format: 'date-time' }`): the same JSON for every value either
// matches. The routes' schemas, which validation and the OpenAPI document read, are not touched:
// this is a copy (docs/decisions.md, "What every build paid for").

/** Keywords that only describe: an option's may be dropped when the options are merged. */
const ANNOTATIONS = new Set(['description', 'title', 'examples', 'example', '$comment', 'deprecated', 'readOnly', 'writeOnly'])

/** Keywords that make an option more than its type and its own keywords: such an anyOf stays. */
const COMPOSED = new Set(['anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else', '$ref', '$id', 'enum', 'const'])

type Schema = Record<string, unknown>

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The schema `schema` as fast-json-stringify is given it: a copy, its mergeable `anyOf`s as `type` lists. */
export function serializerSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(serializerSchema)
  if (!isSchema(schema)) return schema
  const copy: Schema = {}
  for (const [key, value] of Object.entries(schema)) copy[key] = serializerSchema(value)
  return typeList(copy) ?? copy
}

/** `node` with its `anyOf` merged into a `type` list, or undefined when its options cannot be. */
function typeList(node: Schema): Schema | undefined {
  const { anyOf: options, ...merged } = node
  if (!Array.isArray(options) || options.length < 2 || 'type' in merged) return undefined
  const types: string[] = []
  for (const option of options) {
    if (!isSchema(option) || typeof option.type !== 'string' || types.includes(option.type)) return undefined
    for (const [key, value] of Object.entries(option)) {
      if (key === 'type' || ANNOTATIONS.has(key)) continue
      if (COMPOSED.has(key) || key in merged) return undefined
      merged[key] = value
    }
    types.push(option.type)
  }
  // fast-json-stringify tries the types in their order, null first, and takes for a string anything
  // that writes itself as one (a Date, and an array or object with its own toString): so a string
  // comes last, and beside an object, which a Date is too, the anyOf stays.
  if (types.includes('string') && types.includes('object')) return undefined
  return { ...merged, type: [...types.filter((type) => type !== 'string'), ...types.filter((type) => type === 'string')] }
}
