import t from 'tap'
import { rawRows, supporterWithToken, V1 } from '../fixtures/app.ts'
import { logCapture } from '../fixtures/log.ts'
import { eventually } from '../multiprocess/two-apps.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { form } from '../fixtures/files.ts'
import { credentialOf, keyOf } from '../../plugins/http/idempotency.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Idempotency-Key on the API's POSTs (docs/decisions.md, "Safe retries, cursors and the change
// feed"), on the suite's engine: one key, one change, whatever the number of repeats and however
// they overlap; the same key with another request refused; a refused request lets its key go;
// after 24 hours (the injected clock) the key is free again; keys are the credential's and the
// site's own; the answer kept is sealed.

const withKey = (bearer: Record<string, string>, key: string) => ({ ...bearer, 'idempotency-key': key })

async function count(app: Awaited<ReturnType<typeof discussionApp>>['app'], siteId: number): Promise<number> {
  const [row] = await rawRows(app, 'SELECT count(*) AS n FROM discussions WHERE site_id = ?', [siteId])
  return Number(row.n)
}

t.test('50 concurrent POSTs with one key: one discussion, and all 50 get its answer', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  const body = { title: 'Printer on fire', body: 'It smokes.' }
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => api('POST', `/demo/categories/${questions.id}/discussions`, body, withKey(ann.bearer, '"8e03978e-40d5"'))),
  )
  t.same([...new Set(answers.map((a) => a.statusCode))], [201], 'every one answered 201')
  t.equal(new Set(answers.map((a) => a.body)).size, 1, 'every body the same')
  t.equal(new Set(answers.map((a) => a.headers.location)).size, 1, 'every Location the same')
  t.equal(answers.filter((a) => a.headers['idempotent-replayed'] === 'true').length, 49, 'the 49 repeats say they are')
  t.equal(answers.find((a) => a.headers['idempotent-replayed'] === undefined)!.headers['content-type'], answers[0].headers['content-type'])
  t.equal(await count(app, ann.site.id), 1, 'one discussion created')
  t.equal(answers[0].json().title, 'Printer on fire')

  // The bare form of the same key is the same key (as Stripe's clients send it).
  const bare = await api('POST', `/demo/categories/${questions.id}/discussions`, body, withKey(ann.bearer, '8e03978e-40d5'))
  t.equal(bare.statusCode, 201)
  t.equal(bare.headers['idempotent-replayed'], 'true')
  t.equal(bare.body, answers[0].body)
  // The same fields in another order are the same body.
  const reordered = await app.inject({
    method: 'POST',
    url: `/demo/categories/${questions.id}/discussions`,
    headers: { ...withKey(ann.bearer, '8e03978e-40d5'), 'content-type': 'application/json' },
    payload: '{"body":"It smokes.","title":"Printer on fire"}',
  })
  t.equal(reordered.headers['idempotent-replayed'], 'true')
  t.equal(await count(app, ann.site.id), 1)
})

t.test('the same key with another request is a 422 and changes nothing; a new key is a new request', async (t) => {
  const { app, ann, questions, problems, api } = await discussionApp(t)
  const url = `/demo/categories/${questions.id}/discussions`
  const first = await api('POST', url, { title: 'One', body: 'First.' }, withKey(ann.bearer, 'k-1'))
  t.equal(first.statusCode, 201)
  const otherBody = await api('POST', url, { title: 'One', body: 'Something else.' }, withKey(ann.bearer, 'k-1'))
  t.equal(otherBody.statusCode, 422)
  t.match(otherBody.json(), { error: 'idempotency_key_reused', message: /another request/ })
  const otherAddress = await api('POST', `/demo/categories/${problems.id}/discussions`, { title: 'One', body: 'First.' }, withKey(ann.bearer, 'k-1'))
  t.equal(otherAddress.statusCode, 422, 'the same body to another address')
  const reply = await api('POST', '/demo/discussions/1/comments', { body: 'First.' }, withKey(ann.bearer, 'k-1'))
  t.equal(reply.statusCode, 422, 'another route')
  t.equal(await count(app, ann.site.id), 1)
  const [{ n: comments }] = await rawRows(app, 'SELECT count(*) AS n FROM comments', [])
  t.equal(Number(comments), 1, 'no comment written by the refused reply')
  const fresh = await api('POST', url, { title: 'One', body: 'Something else.' }, withKey(ann.bearer, 'k-2'))
  t.equal(fresh.statusCode, 201)
  t.equal(fresh.headers['idempotent-replayed'], undefined)
  // Without a key, as before: every POST is a new one.
  t.equal((await api('POST', url, { title: 'One', body: 'First.' })).statusCode, 201)
  t.equal((await api('POST', url, { title: 'One', body: 'First.' })).statusCode, 201)
  t.equal(await count(app, ann.site.id), 4)
})

t.test('after 24 hours the key is free again; before, the first answer', async (t) => {
  const { app, clock, ann, questions, api } = await discussionApp(t)
  const url = `/demo/categories/${questions.id}/discussions`
  const body = { title: 'Daily report', body: 'Numbers.' }
  const first = await api('POST', url, body, withKey(ann.bearer, 'daily'))
  clock.advance(24 * 60 * 60 * 1000 - 1)
  const late = await api('POST', url, body, withKey(ann.bearer, 'daily'))
  t.equal(late.headers['idempotent-replayed'], 'true', 'a millisecond before the day is up: the first answer')
  t.equal(late.body, first.body)
  clock.advance(2)
  const next = await api('POST', url, body, withKey(ann.bearer, 'daily'))
  t.equal(next.statusCode, 201)
  t.equal(next.headers['idempotent-replayed'], undefined, 'a day later: a new request')
  t.equal(next.json().number, 2)
  t.equal(await count(app, ann.site.id), 2)
  // And another body is fine with it now: the old request is forgotten.
  clock.advance(24 * 60 * 60 * 1000 + 1)
  t.equal((await api('POST', url, { title: 'Another', body: 'Other.' }, withKey(ann.bearer, 'daily'))).statusCode, 201)
  // Pruning removes what is older than a day, and only that.
  clock.advance(24 * 60 * 60 * 1000 + 1)
  await api('POST', url, { title: 'Kept', body: 'Kept.' }, withKey(ann.bearer, 'fresh'))
  t.equal(await app.idempotencyKeys.prune(), 1, "the old key's row removed")
  t.same((await rawRows(app, 'SELECT key FROM idempotency_keys', [])).map((r) => r.key), ['fresh'])
})

t.test('a refused request lets its key go: the repeat that can succeed does', async (t) => {
  const { app, ann, questions, api, create } = await discussionApp(t)
  await create()
  const stale = await api('POST', '/demo/discussions/1/comments', { body: 'Late answer.' }, { ...withKey(ann.bearer, 'reply-1'), 'if-match': '"stale"' })
  t.equal(stale.statusCode, 412)
  const again = await api('POST', '/demo/discussions/1/comments', { body: 'Late answer.' }, withKey(ann.bearer, 'reply-1'))
  t.equal(again.statusCode, 201, 'not the 412 again: the refused request wrote nothing, and the key was let go')
  t.equal(again.headers['idempotent-replayed'], undefined)
  const unknown = await api('POST', '/demo/categories/999999/discussions', { title: 'x', body: 'y' }, withKey(ann.bearer, 'lost'))
  t.equal(unknown.statusCode, 404)
  t.same(await rawRows(app, "SELECT key FROM idempotency_keys WHERE key = 'lost'", []), [], 'no row left of it')
  // A bad body is refused before any key is claimed.
  t.equal((await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 5 }, withKey(ann.bearer, 'bad'))).statusCode, 400)
  t.same(await rawRows(app, "SELECT key FROM idempotency_keys WHERE key = 'bad'", []), [])
})

t.test('a repeat while the first request is in flight waits for its answer, and is a 409 when none comes', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t, { idempotency: { waitMs: 200 } })
  const url = `/demo/categories/${questions.id}/discussions`
  const body = { title: 'Slow one', body: 'Still writing.' }
  // Another process's request with this key has claimed it and not answered yet (it is what such a request leaves).
  const owner = { siteId: ann.site.id, credential: `personal_token:${ann.token.id}` }
  const fingerprintOfBody = await (async () => {
    // The same request through the plugin claims with its own fingerprint: read it back from the row a first try leaves.
    const probe = await api('POST', url, body, withKey(ann.bearer, 'probe'))
    t.equal(probe.statusCode, 201)
    const [row] = await rawRows(app, "SELECT fingerprint FROM idempotency_keys WHERE key = 'probe'", [])
    return String(row.fingerprint)
  })()
  const claim = await app.idempotencyKeys.claim(owner, 'in-flight', fingerprintOfBody.replace('probe', 'in-flight'))
  t.equal(claim.claimed, true)
  const before = await count(app, ann.site.id)
  const busy = await api('POST', url, body, withKey(ann.bearer, 'in-flight'))
  t.equal(busy.statusCode, 409)
  t.equal(busy.headers['retry-after'], '1')
  t.match(busy.json(), { error: 'idempotency_key_in_use' })
  t.equal(await count(app, ann.site.id), before, 'nothing created meanwhile')
  // Its answer arrives while a repeat waits: the repeat gets it.
  const waiting = api('POST', url, body, withKey(ann.bearer, 'in-flight'))
  await new Promise((resolve) => setTimeout(resolve, 50))
  if (!claim.claimed) throw new Error('claimed above')
  await app.idempotencyKeys.answered(owner, 'in-flight', claim.at, { status: 201, headers: { 'content-type': 'application/json; charset=utf-8', location: 'https://api.example.test/demo/discussions/77' }, body: '{"number":77}' })
  const got = await waiting
  t.equal(got.statusCode, 201)
  t.equal(got.headers.location, 'https://api.example.test/demo/discussions/77')
  t.equal(got.body, '{"number":77}')
  t.equal(await count(app, ann.site.id), before)
})

t.test("keys are the credential's and the site's own", async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  const url = `/demo/categories/${questions.id}/discussions`
  const body = { title: 'Same words', body: 'Same body.' }
  const mine = await api('POST', url, body, withKey(ann.bearer, 'shared-key'))
  // Ann's second token, and Bob's: the same key is not theirs to replay.
  const { value } = await app.tokens.create({ siteId: ann.site.id, userId: ann.user.id, name: 'second', access: 'write', expiresInDays: 30 })
  const second = await api('POST', url, body, withKey({ authorization: `Bearer ${value}`, accept: V1 }, 'shared-key'))
  t.equal(second.statusCode, 201)
  t.equal(second.headers['idempotent-replayed'], undefined, "another token's key is its own")
  t.not(second.json().number, mine.json().number)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const bobs = await api('POST', url, body, withKey(bob.bearer, 'shared-key'))
  t.equal(bobs.headers['idempotent-replayed'], undefined, "another person's key is theirs")
  t.not(bobs.json().number, mine.json().number)
  // Another site: its own keys, and its own category.
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  const otherCategory = await app.categories.add(other.site.id, 'General', true)
  const elsewhere = await api('POST', `/other/categories/${otherCategory.id}/discussions`, body, withKey(other.bearer, 'shared-key'))
  t.equal(elsewhere.statusCode, 201)
  t.equal(elsewhere.headers['idempotent-replayed'], undefined)
  t.equal(await count(app, ann.site.id), 3)
})

t.test('the header: quoted or bare, else a 400 naming it; every POST of the API but uploads and MCP', onSqlite("the header's forms and the routes that take it"), async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  const url = `/demo/categories/${questions.id}/discussions`
  for (const bad of ['""', '"unclosed', 'a'.repeat(256), 'clé', '"a"b"', ' ']) {
    const refused = await api('POST', url, { title: 'x', body: 'y' }, withKey(ann.bearer, bad))
    t.equal(refused.statusCode, 400, JSON.stringify(bad))
    t.match(refused.json(), { fields: [{ field: 'Idempotency-Key' }] })
  }
  t.equal(await count(app, ann.site.id), 0, 'nothing created by a refused key')
  t.equal(keyOf('"a\\"b"'), 'a"b', 'escapes of a Structured Field string')
  t.equal(keyOf('"a\\\\b"'), 'a\\b')
  t.equal(keyOf('a'.repeat(255)), 'a'.repeat(255))
  t.equal(credentialOf({ method: 'oauth_token', grant: 'g1', site: ann.site, user: ann.user, access: 'write', notesOnly: false }), 'oauth_token:g1')
  t.equal(credentialOf({ method: 'legacy_token', site: ann.site, user: ann.user, access: 'write', notesOnly: false }), `legacy_token:${ann.user.id}`)

  // Other POSTs: an action, a saved reply of an administrator.
  await api('POST', url, { title: 'Act on me', body: 'y' })
  const resolve = () => api('POST', '/demo/discussions/1/resolve', undefined, withKey(ann.bearer, 'resolve-1'))
  t.equal((await resolve()).statusCode, 200)
  t.equal((await resolve()).headers['idempotent-replayed'], 'true')
  // A GET ignores the header.
  const get = await api('GET', '/demo/discussions', undefined, withKey(ann.bearer, '"'))
  t.equal(get.statusCode, 200)
  // An upload takes no key (a repeat makes an unused upload, swept within a day): not refused, not kept.
  const file = await form({ file: { name: 'a.txt', bytes: Buffer.from('hello') } })
  const upload = await app.inject({ method: 'POST', url: '/demo/uploads', headers: { ...withKey(ann.bearer, 'up'), 'content-type': file.type }, payload: file.payload })
  t.equal(upload.statusCode, 201)
  t.same(await rawRows(app, "SELECT key FROM idempotency_keys WHERE key = 'up'", []), [])
})

t.test('a multipart post repeated with its key: one discussion, and the repeat leaves no upload behind', async (t) => {
  const { app, ann, questions } = await discussionApp(t)
  const send = async (bytes: Buffer) => {
    const body = await form({ title: 'Log attached', body: 'See the log.', file: { name: 'server.log', bytes } })
    return app.inject({ method: 'POST', url: `/demo/categories/${questions.id}/discussions`, headers: { ...withKey(ann.bearer, 'with-file'), 'content-type': body.type }, payload: body.payload })
  }
  const first = await send(Buffer.from('error at line 1\n'))
  t.equal(first.statusCode, 201)
  const repeat = await send(Buffer.from('error at line 1\n'))
  t.equal(repeat.headers['idempotent-replayed'], 'true')
  t.equal(repeat.body, first.body)
  const [{ n: files }] = await rawRows(app, 'SELECT count(*) AS n FROM attachments', [])
  t.equal(Number(files), 1, "the repeat's upload was discarded")
  const other = await send(Buffer.from('another file\n'))
  t.equal(other.statusCode, 422, 'other bytes are another request')
  t.equal(await count(app, ann.site.id), 1)
})

t.test('the answer kept is sealed: a copy of the database does not show it', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Invoice 4711 for ACME', body: 'Secret numbers.' }, withKey(ann.bearer, 'sealed'))
  const [row] = await rawRows(app, "SELECT answer, status FROM idempotency_keys WHERE key = 'sealed'", [])
  t.equal(Number(row.status), 201)
  t.match(String(row.answer), /^v1\./)
  t.notMatch(String(row.answer), /ACME|Secret/)
})

t.test('a kept answer the server key cannot open is as good as none: 409 until the key expires; a key let go is claimed again', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t, { idempotency: { waitMs: 50 } })
  const url = `/demo/categories/${questions.id}/discussions`
  const body = { title: 'Sealed before', body: 'Under another key.' }
  t.equal((await api('POST', url, body, withKey(ann.bearer, 'rekeyed'))).statusCode, 201)
  // As after a new SERVICE_SECRET: the row is there, its answer sealed by a key this server does not hold.
  await rawRows(app, "UPDATE idempotency_keys SET answer = 'v1.AAAA' WHERE key = 'rekeyed'", [])
  const repeat = await api('POST', url, body, withKey(ann.bearer, 'rekeyed'))
  t.equal(repeat.statusCode, 409, 'not run again: whether it succeeded is known, its answer is not')
  t.equal(await count(app, ann.site.id), 1)

  // The store's look at a key whose first request was refused meanwhile (its row gone): the looker claims it.
  const owner = { siteId: ann.site.id, credential: credentialOf({ method: 'personal_token', tokenId: ann.token.id, site: ann.site, user: ann.user, access: 'write', notesOnly: false }) }
  const first = await app.idempotencyKeys.claim(owner, 'let-go', 'fingerprint-1')
  if (!first.claimed) throw new Error('the first claim takes it')
  t.match(await app.idempotencyKeys.look(owner, 'let-go', 'fingerprint-1'), { claimed: false, mismatch: false, answer: undefined }, 'in flight')
  await app.idempotencyKeys.release(owner, 'let-go', first.at)
  t.match(await app.idempotencyKeys.look(owner, 'let-go', 'fingerprint-1'), { claimed: true }, 'gone: claimed by the one that looked')
})

t.test('each process removes the keys older than a day in the background, and says so; a failure to is a warning', async (t) => {
  const log = logCapture()
  const { app, clock, ann, questions, api } = await discussionApp(t, { idempotency: { pruneEveryMs: 50 }, logStream: log.stream })
  await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Old', body: 'x' }, withKey(ann.bearer, 'old-key'))
  clock.advance(24 * 60 * 60 * 1000 + 1)
  await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'New', body: 'x' }, withKey(ann.bearer, 'new-key'))
  t.ok(await eventually(() => log.entries().some((e) => (e.idempotencyKeys as { removed?: number } | undefined)?.removed === 1)), 'the log says one was removed')
  t.same((await rawRows(app, 'SELECT key FROM idempotency_keys', [])).map((r) => r.key), ['new-key'])
  // The table gone from under it (a damaged database): the next run warns, and the service goes on.
  await rawRows(app, 'DROP TABLE idempotency_keys', [])
  t.ok(await eventually(() => log.entries().some((e) => e.level === 40 && e.msg === 'could not remove old Idempotency-Keys')), 'a warning')
  t.equal((await api('GET', '/demo/discussions')).statusCode, 200)
})

t.test('an answer that cannot be kept (the database fails at that moment) is still sent, and the key stays claimed', async (t) => {
  const log = logCapture()
  const { app, ann, questions, api } = await discussionApp(t, { logStream: log.stream, idempotency: { waitMs: 50 } })
  // The database refuses to write an answer (a trigger standing for a full disk); the claim itself goes in.
  if (app.database.kind === 'sqlite') {
    await rawRows(app, "CREATE TRIGGER refuse_answers BEFORE UPDATE ON idempotency_keys BEGIN SELECT RAISE(ABORT, 'the disk is full'); END", [])
  } else {
    await rawRows(app, "CREATE FUNCTION refuse_answers() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'the disk is full'; END $$ LANGUAGE plpgsql", [])
    await rawRows(app, 'CREATE TRIGGER refuse_answers BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION refuse_answers()', [])
  }
  const url = `/demo/categories/${questions.id}/discussions`
  const made = await api('POST', url, { title: 'Made', body: 'x' }, withKey(ann.bearer, 'unkept'))
  t.equal(made.statusCode, 201, "the request's answer stands")
  t.ok(log.entries().some((e) => e.level === 40 && e.msg === 'could not keep the answer of an Idempotency-Key'), 'a warning')
  await rawRows(app, 'DROP TRIGGER refuse_answers' + (app.database.kind === 'sqlite' ? '' : ' ON idempotency_keys'), [])
  const repeat = await api('POST', url, { title: 'Made', body: 'x' }, withKey(ann.bearer, 'unkept'))
  t.equal(repeat.statusCode, 409, 'a repeat is not run again')
  t.equal(await count(app, ann.site.id), 1)
})
