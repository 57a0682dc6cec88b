import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import t from 'tap'
import { serializerSchema } from '../../lib/serializer-schema.ts'
import { newTestApp } from '../fixtures/app.ts'

// Engines: one: a pure function over schemas, and the schemas of the routes as the app declares them; no store is read.
// lib/serializer-schema.ts: a response schema's mergeable anyOfs as type lists, which
// fast-json-stringify writes without asking Ajv, to the same JSON.

const nullableDate = { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }], description: 'When.' }
const owner = { anyOf: [{ type: 'object', required: ['id', 'name'], properties: { id: { type: 'integer' }, name: { type: 'string' } } }, { type: 'null' }] }
const value = { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'array', items: { type: 'string' } }] }
/** fast-json-stringify's function for `schema`, as Fastify's compiler makes it. */
const serializer = (schema: unknown) => SerializerSelector()({}, {})({ schema: schema as object, method: 'GET', url: '/x', httpStatus: '200' }) as (value: unknown) => string
/** The code fast-json-stringify writes for `schema`. */
const codeOf = (schema: unknown) => SerializerSelector()({}, { mode: 'standalone' })({ schema: schema as object, method: 'GET', url: '/x', httpStatus: '200' }) as unknown as string

const item = {
  type: 'object',
  properties: { due: nullableDate, owner, value, count: { anyOf: [{ type: 'integer' }, { type: 'null' }] }, plain: { type: 'string' } },
}

t.test('an anyOf of options of one type each becomes a type list with their keywords; a copy, the schema untouched', async (t) => {
  const before = JSON.stringify(item)
  const written = serializerSchema(item) as { properties: Record<string, unknown> }
  t.same(written.properties.due, { type: ['null', 'string'], format: 'date-time', description: 'When.' })
  t.same(written.properties.owner, { type: ['object', 'null'], required: ['id', 'name'], properties: { id: { type: 'integer' }, name: { type: 'string' } } })
  t.same(written.properties.value, { type: ['number', 'boolean', 'array', 'string'], items: { type: 'string' } }, 'a string last: fast-json-stringify would take an array for one')
  t.same(written.properties.plain, { type: 'string' })
  t.equal(JSON.stringify(item), before, 'the route keeps its own schema, which validation and the OpenAPI document read')
  t.same(serializerSchema({ type: 'array', items: nullableDate }), { type: 'array', items: { type: ['null', 'string'], format: 'date-time', description: 'When.' } }, 'within an array too')
  t.same(serializerSchema({ type: 'object', properties: { a: { anyOf: [{ type: 'object', properties: { b: { anyOf: [{ type: 'string' }, { type: 'null' }] } } }, { type: 'null' }] } } }), { type: 'object', properties: { a: { type: ['object', 'null'], properties: { b: { type: ['null', 'string'] } } } } }, 'and within an option')
})

t.test('an anyOf stays where merging could say something else', async (t) => {
  const kept = [
    { anyOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { type: 'object', properties: { b: { type: 'string' } } }] },
    { anyOf: [{ type: 'string', maxLength: 3 }, { type: 'array', maxLength: 4 }] },
    { anyOf: [{ enum: ['good', 'not_good'] }, { type: 'null' }] },
    { anyOf: [{ type: 'string', enum: ['a'] }, { type: 'null' }] },
    { anyOf: [{ $ref: '#/definitions/x' }, { type: 'null' }] },
    { anyOf: [{ type: ['string', 'number'] }, { type: 'null' }] },
    { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }], format: 'uri' },
    { anyOf: [{ type: 'string' }, { type: 'null' }], type: 'string' },
    { anyOf: [{ type: 'string' }] },
    { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'object', properties: { at: { type: 'string' } } }] },
    { anyOf: [{ type: 'string', anyOf: [{ minLength: 1 }] }, { type: 'null' }] },
  ]
  for (const schema of kept) t.same(serializerSchema(schema), schema, JSON.stringify(schema))
})

t.test('fast-json-stringify writes the same JSON from either, for every value the anyOf matches', async (t) => {
  const asAnyOf = serializer(item)
  const asList = serializer(serializerSchema(item))
  const values = [
    { due: null, owner: null, value: 'text', count: null, plain: 'x' },
    { due: '2026-12-06T07:00:00.000Z', owner: { id: 7, name: 'Ann', extra: 'never written' }, value: 3.5, count: 12, plain: 'y' },
    { due: new Date(Date.UTC(2026, 11, 6, 7)), owner: { id: 8, name: 'Bea' }, value: true, count: 0, plain: '' },
    { due: null, owner: null, value: ['a', 'b'], count: 4 },
    { owner: { id: 9, name: 'Cy' }, value: false },
    {},
  ]
  for (const v of values) t.equal(asList(v), asAnyOf(v), JSON.stringify(v))
  t.throws(() => asList({ owner: { id: 1 } }), 'an owner without its required name is refused, as before')
  t.throws(() => asAnyOf({ owner: { id: 1 } }))
})

t.test("the discussions' listing is written without Ajv: its nullable fields are all type lists", async (t) => {
  const { app } = await newTestApp(t)
  let listing: object | undefined
  app.addHook('onRoute', (route) => {
    if (route.method === 'GET' && route.url === '/:site/discussions') listing ??= (route.schema?.response as Record<string, object>)['200']
  })
  await app.ready()
  t.match(JSON.stringify(listing), /"anyOf"/, 'the route declares anyOfs')
  t.notMatch(codeOf(serializerSchema(listing)), /getSchemaValidator|validator\.validate/, 'and its serializer asks no validator')
  t.match(codeOf(listing), /getSchemaValidator|validator\.validate/, 'where the schema as declared would')
})
