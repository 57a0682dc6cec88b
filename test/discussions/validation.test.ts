import t from 'tap'
import { clientErrorBody, describeProblems, fieldProblems, InvalidRequest } from '../../plugins/http/validation.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The API's own validator is TypeBox (through the routes); other routes of the app may validate
// with Fastify's Ajv, whose errors differ a little. Both are named the same way.

const error = (keyword: string, instancePath: string, params: Record<string, unknown>, message = `failed ${keyword}`) => ({
  keyword,
  instancePath,
  schemaPath: '#',
  params,
  message,
})

t.test('validator errors become one problem per field', async (t) => {
  t.same(
    fieldProblems(
      [
        error('required', '', { missingProperty: 'title' }),
        error('required', '', { requiredProperties: ['title', 'body'] }),
        error('type', '/count', { type: 'number' }),
        error('type', '/tags', { type: 'array' }),
        error('type', '/odd', { type: 'null' }),
        error('minLength', '/name', { limit: 3 }),
        error('maximum', '/page', { limit: 9 }),
        error('maxLength', '/page', { limit: 9 }),
        error('const', '/nested/field', {}, 'must be equal to constant'),
        { ...error('custom', '/plain', {}), message: undefined },
      ],
      'body',
    ),
    [
      { field: 'title', problem: 'is required' },
      { field: 'body', problem: 'is required' },
      { field: 'count', problem: 'must be a number' },
      { field: 'tags', problem: 'must be an array' },
      { field: 'odd', problem: 'must be of type null' },
      { field: 'name', problem: 'must be at least 3 characters' },
      { field: 'page', problem: 'must be at most 9' },
      { field: 'nested.field', problem: 'must be equal to constant' },
      { field: 'plain', problem: 'is not valid' },
    ],
  )
  t.same(fieldProblems([error('type', '', { type: 'object' })], 'querystring'), [{ field: '(query string)', problem: 'must be a JSON object' }])
  t.same(fieldProblems([error('type', '', { type: 'object' })], 'headers'), [{ field: '(headers)', problem: 'must be a JSON object' }])
  t.same(fieldProblems([error('type', '', { type: 'object' })], undefined), [{ field: '(request body)', problem: 'must be a JSON object' }])
})

t.test('client error bodies', async (t) => {
  const invalid = new InvalidRequest([{ field: 'since', problem: 'is not a date' }])
  t.equal(invalid.statusCode, 400)
  t.same(clientErrorBody(invalid), { error: 'invalid_request', message: 'Invalid request: since is not a date.', fields: invalid.fields })
  t.equal(describeProblems([{ field: 'a', problem: 'x' }, { field: 'b', problem: 'y' }]), 'Invalid request: a x; b y.')
  t.same(clientErrorBody({ code: 'not_found', message: 'There is no such API resource.' }), { error: 'not_found', message: 'There is no such API resource.' })
  t.same(clientErrorBody({ message: 'Bad thing' }), { error: 'bad_request', message: 'Bad thing' }, 'no code: bad_request')
  t.same(clientErrorBody({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', message: 'x' }, 1024), {
    error: 'payload_too_large',
    message: 'The request body is larger than the limit of 1024 bytes.',
  })
})

t.test('store refusals become HTTP errors; other errors pass through', async (t) => {
  const { httpError } = await import('../../routes/api/discussions/http-errors.ts')
  const { StoreError } = await import('../../db/stores/errors.ts')
  const plain = new Error('boom')
  t.equal(httpError(plain), plain)
  t.match(httpError(new StoreError('there is no discussion 5 on this site', 'not_found')), {
    statusCode: 404,
    code: 'not_found',
    message: 'There is no discussion 5 on this site.',
  })
  t.match(httpError(new StoreError('x is taken', 'conflict')), { statusCode: 409, code: 'conflict' })
  t.match(httpError(new StoreError('not allowed', 'forbidden')), { statusCode: 403, code: 'forbidden' })
  t.match(httpError(new StoreError('too many', 'limit')), { statusCode: 429, code: 'limit' })
  t.same((httpError(new StoreError('is odd', 'invalid', 'title')) as InvalidRequest).fields, [{ field: 'title', problem: 'is odd' }])
  t.same((httpError(new StoreError('is odd', 'invalid')) as InvalidRequest).fields, [{ field: 'request', problem: 'is odd' }])
})
