import fc from 'fast-check'
import t, { type Test } from 'tap'
import { apiCall, bannerToken, startServer, type RunningServer } from '../fixtures/server.ts'
import { sharedDatabase } from './two-apps.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The change feed's promise (docs/decisions.md, "Safe retries, cursors and the change feed"),
// checked as a property with two real service processes on one database of the suite's engine: a
// random mix of 2,000 creates, changes, comments, deletes and restores is sent through both at
// once, ten at a time, while a mirror reads nothing but the feed (long polling, from one of them);
// at the end the mirror equals what the API lists, every discussion in every state, field for
// field, and holds every comment each one has. A change the feed skipped, or told out of commit
// order (an older state read after a newer one), would leave the mirror behind.

type Discussion = Record<string, unknown> & { number: number; comments_count: number }
type Feed = { changes: Array<{ discussion: Discussion; comment: { number: number } | null }>; next_cursor: string; end_of_stream: boolean }

type Op =
  | { kind: 'create'; public: boolean }
  | { kind: 'change'; target: number; title: string; tags: string[] }
  | { kind: 'comment'; target: number; internal: boolean }
  | { kind: 'delete' | 'restore' | 'resolve'; target: number }

const target = fc.nat({ max: 10_000 })
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('create' as const), public: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('change' as const), target, title: fc.string({ minLength: 1, maxLength: 30 }).filter((s) => s.trim().length > 0), tags: fc.array(fc.constantFrom('billing', 'bug', 'vip'), { maxLength: 2 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('comment' as const), target, internal: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('delete' as const, 'restore' as const, 'resolve' as const), target }) },
)

const call = apiCall

/** Every discussion the API lists, in every state, by number: the live ones and the deleted ones, each walked by cursor. */
async function listed(server: RunningServer, token: string): Promise<Map<number, Discussion>> {
  const all = new Map<number, Discussion>()
  for (const base of ['/demo/discussions', '/demo/discussions/deleted']) {
    for (let cursor: string | null = ''; cursor !== null; ) {
      const page = (await call(server, token, 'GET', `${base}?cursor=${cursor}`)).json as { discussions: Discussion[]; next_cursor: string | null }
      for (const d of page.discussions) all.set(d.number, d)
      cursor = page.next_cursor
    }
  }
  return all
}

async function property(t: Test, ops: Op[]) {
  const { databaseAddress, secret } = await sharedDatabase(t)
  const env = { SERVICE_DB: databaseAddress, ...(secret === undefined ? {} : { SERVICE_SECRET: secret }), SERVICE_RATE_LIMIT_WRITES: '10000', SERVICE_RATE_LIMIT_READS: '100000', SERVICE_BASE_URL: 'http://api.example.test', SERVICE_SITE_URL: 'http://help.example.test/{site}' }
  const one = await startServer(t, env)
  const token = await bannerToken(one)
  const two = await startServer(t, env)
  const [category] = (await call(one, token, 'GET', '/demo/categories')).json.categories as Array<{ id: number }>

  // Behind one proxy, both answer with one public address.
  // The mirror: built from the feed alone, read through the second process while both write.
  const mirror = new Map<number, Discussion>()
  const commentsSeen = new Map<number, Set<number>>()
  let cursor = ''
  let writing = true
  const read = async () => {
    const feed = (await call(two, token, 'GET', `/demo/changes?after=${cursor}&wait=1`)).json as Feed
    for (const change of feed.changes) {
      mirror.set(change.discussion.number, change.discussion)
      if (change.comment) commentsSeen.set(change.discussion.number, (commentsSeen.get(change.discussion.number) ?? new Set()).add(change.comment.number))
    }
    cursor = feed.next_cursor
    return feed.end_of_stream
  }
  const mirroring = (async () => {
    while (writing) await read()
  })()

  let made = (await listed(one, token)).size
  const statuses = new Map<number, number>()
  for (let i = 0; i < ops.length; i += 10) {
    const batch = ops.slice(i, i + 10)
    const answers = await Promise.all(
      batch.map((o, j) => {
        const server = (i + j) % 2 === 0 ? one : two
        const number = 'target' in o ? 1 + (o.target % Math.max(made, 1)) : 0
        switch (o.kind) {
          case 'create':
            return call(server, token, 'POST', `/demo/categories/${category!.id}/discussions`, { title: `Discussion ${i + j}`, body: 'Opening post.', public: o.public })
          case 'change':
            return call(server, token, 'PUT', `/demo/discussions/${number}`, { title: o.title, tags: o.tags })
          case 'comment':
            return call(server, token, 'POST', `/demo/discussions/${number}/comments`, { body: `Comment of op ${i + j}`, internal: o.internal })
          case 'delete':
            return call(server, token, 'DELETE', `/demo/discussions/${number}`)
          default:
            return call(server, token, 'POST', `/demo/discussions/${number}/${o.kind}`)
        }
      }),
    )
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
    made += answers.filter((a, j) => batch[j]!.kind === 'create' && a.status === 201).length
  }
  writing = false
  await mirroring
  // Read on to the end of the stream: everything committed is there now.
  while (!(await read()));

  if ((statuses.get(503) ?? 0) > 0) t.comment(one.output().split('\n').filter((l) => /"level":(40|50)/.test(l)).slice(0, 3).join('\n'))
  t.same([...statuses.keys()].filter((s) => s >= 500 || s === 429), [], `no 5xx, no 429 (${JSON.stringify(Object.fromEntries(statuses))})`)
  t.ok((statuses.get(201) ?? 0) > ops.length / 2, 'most writes went through')
  const truth = await listed(one, token)
  t.equal(truth.size, made, 'every create listed')
  t.equal(mirror.size, truth.size, 'the mirror has every discussion')
  const differing = [...truth].filter(([number, d]) => JSON.stringify(mirror.get(number)) !== JSON.stringify(d)).map(([number]) => number)
  t.same(differing, [], "and each as the API shows it, field for field")
  if (differing.length > 0) t.comment(JSON.stringify([mirror.get(differing[0]!), truth.get(differing[0]!)]))
  const missingComments = [...truth.values()].filter((d) => (commentsSeen.get(d.number)?.size ?? 0) !== d.comments_count).map((d) => d.number)
  t.same(missingComments, [], 'every comment of every discussion came by the feed')
  await Promise.all([one.stop(), two.stop()])
}

t.test('a mirror built only from the change feed equals the listing after 2,000 random writes through two processes', async (t) => {
  // One run of 2,000 operations (fast-check prints its seed and the failing mix should it fail).
  await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 2000, maxLength: 2000 }), (ops) => property(t, ops)), { numRuns: 1 })
})
