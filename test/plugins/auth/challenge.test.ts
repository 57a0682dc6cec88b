import t from 'tap'
import { buildChallenge } from '../../../plugins/auth/challenge.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

const resourceMetadata = 'https://api.example.test/.well-known/oauth-protected-resource/demo'

t.test('no token: realm, resource_metadata and scope "read write", no error', async (t) => {
  t.equal(
    buildChallenge({ resourceMetadata, scope: 'read write' }),
    'Bearer realm="Service", resource_metadata="https://api.example.test/.well-known/oauth-protected-resource/demo", scope="read write"',
  )
})

t.test('invalid token adds error="invalid_token"', async (t) => {
  t.equal(
    buildChallenge({ resourceMetadata, scope: 'read write', error: 'invalid_token' }),
    `Bearer realm="Service", resource_metadata="${resourceMetadata}", scope="read write", error="invalid_token"`,
  )
})

t.test('expired token adds error_description last', async (t) => {
  t.equal(
    buildChallenge({ resourceMetadata, scope: 'read write', error: 'invalid_token', errorDescription: 'The access token has expired' }),
    `Bearer realm="Service", resource_metadata="${resourceMetadata}", scope="read write", error="invalid_token", error_description="The access token has expired"`,
  )
})

t.test('insufficient scope asks for "write"', async (t) => {
  t.equal(
    buildChallenge({ resourceMetadata, scope: 'write', error: 'insufficient_scope' }),
    `Bearer realm="Service", resource_metadata="${resourceMetadata}", scope="write", error="insufficient_scope"`,
  )
})

t.test('a value that cannot be quoted is a programming error, not a header', async (t) => {
  t.throws(() => buildChallenge({ resourceMetadata: 'https://x/"', scope: 'write' }), /cannot be quoted/)
  t.throws(() => buildChallenge({ resourceMetadata: 'https://x/\\', scope: 'write' }), /cannot be quoted/)
  t.throws(() => buildChallenge({ resourceMetadata, scope: 'write', errorDescription: 'line\nbreak' }), /cannot be quoted/)
})
