import fc from 'fast-check'
import t from 'tap'
import { authenticatedRequest } from './arbitraries.ts'
import { fuzzApp, keepsContract, runs, send } from './harness.ts'

// Engines: both: hostile ids and bodies reach the stores as numbers past four bytes and odd text, which PostgreSQL refuses where SQLite takes them.
// Issue 6, item 1: with the genuine Read and write token, hostile paths (encodings, traversal, SQL
// fragments, huge and odd numbers), query strings, Accept values and bodies (wrong types, huge,
// deeply nested, broken JSON, other content types) on every route and method. Nothing is a 5xx;
// every refusal has the JSON error shape and leaves the database as it was.

t.test('hostile paths, queries and bodies with a genuine token: no 5xx, refusals change nothing', async (t) => {
  const { app, known } = await fuzzApp(t)
  await fc.assert(
    fc.asyncProperty(authenticatedRequest(known), (request) => keepsContract(app, request, false, true)),
    runs(400),
  )
  const res = await send(app, { method: 'GET', url: `/demo/discussions/${known.discussionNumber}`, headers: { authorization: `Bearer ${known.token}` } })
  t.equal(res.status, 200, 'the app still answers')
})
