import fc from 'fast-check'
import t from 'tap'
import { refusedRequest } from './arbitraries.ts'
import { fuzzApp, keepsContract, runs, send } from './harness.ts'

// Engines: both: damaged credentials reach the stores' look-ups as odd text and numbers, which PostgreSQL refuses (U+0000, four-byte integers) where SQLite takes them.
// Issue 6, item 1: no credential, or only damaged and random ones (Authorization, X-Service-Auth,
// X-Multipass, auth=, sso=; repeated; oversized; control characters; truncated and bit-flipped
// tokens and multipass strings), on every API route shape with any method, Accept and body. Every
// answer is a documented refusal and the database does not change.

t.test('no usable credential: every answer is a documented refusal, and nothing is written', async (t) => {
  const { app, known } = await fuzzApp(t)
  await fc.assert(
    fc.asyncProperty(refusedRequest(known), (request) => keepsContract(app, request, true)),
    runs(400),
  )
  // Still up and still right for the genuine credentials.
  const res = await send(app, { method: 'GET', url: '/demo', headers: { authorization: `Bearer ${known.token}` } })
  t.equal(res.status, 200, 'the genuine token still works')
  for (const headers of [{ 'x-service-auth': known.legacyKey }, { 'x-multipass': known.multipass }] as Array<Record<string, string>>) {
    t.equal((await send(app, { method: 'GET', url: '/demo', headers })).status, 200, `${Object.keys(headers)[0]} still works`)
  }
})

t.test('a genuine credential sent beside damaged ones is refused; alone it may pass', async (t) => {
  const { app, known } = await fuzzApp(t)
  const genuine = fc.constantFrom<Record<string, string>>(
    { authorization: `Bearer ${known.token}` },
    { 'x-service-auth': known.legacyKey },
    { 'x-multipass': known.multipass },
  )
  await fc.assert(
    fc.asyncProperty(genuine, refusedRequest(known), async (headers, request) => {
      const merged: Record<string, string | string[]> = { ...request.headers }
      for (const [name, value] of Object.entries(headers)) merged[name] = [value, ...[merged[name] ?? []].flat()]
      const extra = Object.keys(request.headers).some((h) => ['authorization', 'x-service-auth', 'x-multipass'].includes(h)) || /[?&](auth|sso)=/.test(request.url)
      await keepsContract(app, { ...request, headers: merged }, extra)
    }),
    runs(150),
  )
})
