import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'

// Request validation of the API routes and the 400 answer that names every bad field.

export interface FieldProblem {
  /** The body field, query parameter or path segment at fault. */
  field: string
  /** Why, as words that follow the field name: "is required", "must not be empty". */
  problem: string
}

/** The field name used when the body as a whole is wrong (not JSON, not an object). */
export const WHOLE_BODY = '(request body)'

/** An answer of 400 invalid_request naming each field at fault; thrown by handlers for checks a schema cannot make. */
export class InvalidRequest extends Error {
  readonly statusCode = 400
  readonly code = 'invalid_request'
  readonly fields: FieldProblem[]

  constructor(fields: FieldProblem[]) {
    super(describeProblems(fields))
    this.fields = fields
  }
}

export function describeProblems(fields: FieldProblem[]): string {
  return `Invalid request: ${fields.map((f) => `${f.field} ${f.problem}`).join('; ')}.`
}

type Schema = { properties?: Record<string, { type?: string; errorMessage?: string | Record<string, string> }> }

const INTEGER = /^\d{1,16}$/

/**
 * Path segments and query parameters arrive as text: those whose schema asks for an integer are
 * converted when they are plain decimal digits, and nothing else is (no "1.5" read as 1, no
 * "0x10" as 16, no "" as 0). Bodies are JSON and never converted: `"title": 123` is an error.
 */
function convertIntegers(schema: Schema, value: object): object {
  const converted: Record<string, unknown> = { ...value }
  for (const [name, text] of Object.entries(converted)) {
    if (schema.properties?.[name]?.type === 'integer' && typeof text === 'string' && INTEGER.test(text)) {
      converted[name] = Number(text)
    }
  }
  return converted
}

/**
 * A schema property may carry `errorMessage`: the problem to report instead of the validator's own
 * words, for every failure but a missing or mistyped value (a string), or per keyword (an object).
 */
function withOwnMessages(schema: Schema, errors: FastifySchemaValidationError[]): FastifySchemaValidationError[] {
  return errors.map((error) => {
    const own = schema.properties?.[error.instancePath.slice(1)]?.errorMessage
    const message = typeof own === 'string' ? own : own?.[error.keyword]
    if (!message || error.keyword === 'required' || (error.keyword === 'type' && typeof own === 'string')) return error
    return { ...error, keyword: 'errorMessage', message }
  })
}

// Compiled once per schema and process, as Fastify's own compilers are (plugins/http/schema-compilers.ts).
const compiled = new WeakMap<TSchema, ReturnType<typeof Compile<TSchema>>>()

/** The schema's TypeBox validator, compiled at its first use (plugins/http/schema-compilers.ts says why). */
export function compiledCheck(schema: TSchema): ReturnType<typeof Compile<TSchema>> {
  let check = compiled.get(schema)
  if (!check) compiled.set(schema, (check = Compile(schema)))
  return check
}

/** TypeBox validation for every part of a request, reporting all the problems of a part at once. */
export const strictValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  let check: ReturnType<typeof Compile<TSchema>> | undefined
  return (value) => {
    check ??= compiledCheck(schema)
    const converted = httpPart === 'body' ? value : convertIntegers(schema as Schema, value as object)
    if (check.Check(converted)) return { value: converted }
    return { error: withOwnMessages(schema as Schema, check.Errors(converted) as FastifySchemaValidationError[]) }
  }
}

const TYPE_WORDS: Record<string, string> = {
  string: 'must be a string',
  integer: 'must be a whole number',
  number: 'must be a number',
  boolean: 'must be true or false',
  object: 'must be a JSON object',
  array: 'must be an array',
}

function problemOf(error: FastifySchemaValidationError): string {
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'type':
      return TYPE_WORDS[String(params.type)] ?? `must be of type ${String(params.type)}`
    case 'minLength':
      return params.limit === 1 ? 'must not be empty' : `must be at least ${String(params.limit)} characters`
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters`
    case 'minimum':
      return `must be at least ${String(params.limit)}`
    case 'maximum':
      return `must be at most ${String(params.limit)}`
    case 'enum':
      return `must be one of: ${(params.allowedValues as unknown[]).join(', ')}`
    default:
      return error.message ?? 'is not valid'
  }
}

const PART_NAMES: Record<string, string> = { body: WHOLE_BODY, querystring: '(query string)', params: '(path)', headers: '(headers)' }

/** One problem per field, the first reported, in the order the validator found them. */
export function fieldProblems(errors: FastifySchemaValidationError[], part: string | undefined): FieldProblem[] {
  const found = new Map<string, string>()
  for (const error of errors) {
    const params = error.params as Record<string, unknown>
    if (error.keyword === 'required') {
      // TypeBox names every missing property at once; Ajv one per error.
      const missing = (params.requiredProperties as string[] | undefined) ?? [String(params.missingProperty)]
      for (const name of missing) if (!found.has(name)) found.set(name, 'is required')
      continue
    }
    const name = error.instancePath === '' ? (PART_NAMES[part ?? ''] ?? WHOLE_BODY) : error.instancePath.slice(1).replaceAll('/', '.')
    if (!found.has(name)) found.set(name, problemOf(error))
  }
  return [...found].map(([field, problem]) => ({ field, problem }))
}

export interface ClientError {
  code?: string
  message: string
  validation?: FastifySchemaValidationError[]
  validationContext?: string
  fields?: FieldProblem[]
}

/**
 * The JSON body of a 4xx answer: `{error, message}` plus `fields` for invalid requests. Fastify's
 * own refusals get stable codes and sentences that say what to do.
 */
export function clientErrorBody(error: ClientError, bodyLimit?: number): { error: string; message: string; fields?: FieldProblem[] } {
  const fields = error.validation ? fieldProblems(error.validation, error.validationContext) : error.fields
  if (fields) return { error: 'invalid_request', message: describeProblems(fields), fields }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return clientErrorBody({ message: '', fields: [{ field: WHOLE_BODY, problem: 'is not valid JSON' }] })
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { error: 'payload_too_large', message: `The request body is larger than the limit of ${bodyLimit} bytes.` }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { error: 'unsupported_media_type', message: 'Send the request body as JSON, with "Content-Type: application/json".' }
    case 'FST_ERR_BAD_URL':
      return { error: 'invalid_path', message: 'The request path is not valid: a percent-escape in it does not decode to UTF-8 text.' }
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { error: 'uri_too_long', message: 'A segment of the request path is longer than the server accepts.' }
  }
  return { error: (error.code ?? 'bad_request').toLowerCase(), message: error.message }
}
