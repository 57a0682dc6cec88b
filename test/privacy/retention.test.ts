import t from 'tap'
import { rawRows, rawStatement } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { form } from '../fixtures/files.ts'
import { until } from '../fixtures/until.ts'

// Engines: both: the retention's batches take the site's lock, which each engine holds its own way.
// Issue 74, item 3: a site that keeps its resolved discussions six months has those idle longer
// deleted for good (their comments, files and kept mails with them), in batches; the dry run says
// how many first; the record of changes says what each batch deleted. Two processes at once:
// test/multiprocess/retention.test.ts.

const MONTH = 31 * 24 * 60 * 60 * 1000

t.test('the retention deletes exactly the discussions past the age, in batches, and their files with them', async (t) => {
  const { app, ann, api: call, create: made, questions, clock } = await discussionApp(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => call(method, url, payload)
  const create = async (title: string) => (await made({ title, body: `${title}, by Carol.`, author_email: 'carol@customer.test' }, questions.id)) as { number: number }

  // 50 resolved (one with a file), one marked spam, one deleted, one left open: idle for seven months.
  const old: number[] = []
  for (let i = 0; i < 50; i++) old.push((await create(`Old ${i}`)).number)
  const upload = await form({ file: { name: 'invoice.txt', bytes: Buffer.from('total: 12.00\n') } })
  const up = (await app.inject({ method: 'POST', url: '/demo/uploads', headers: { ...ann.bearer, 'content-type': upload.type }, payload: upload.payload })).json().uploads[0]
  t.equal((await api('POST', `/demo/discussions/${old[0]}/comments`, { body: 'The invoice.', uploads: [up.id] })).statusCode, 201)
  for (const number of old) t.equal((await api('POST', `/demo/discussions/${number}/resolve`, {})).statusCode, 200)
  const spam = (await create('Old spam')).number
  t.equal((await api('POST', `/demo/discussions/${spam}/spam`, {})).statusCode, 200)
  const binned = (await create('Old and in the bin')).number
  t.equal((await api('DELETE', `/demo/discussions/${binned}`)).statusCode, 200)
  const open = (await create('Old but open')).number
  const idle = new Date(clock() - 7 * MONTH)
  await rawStatement(app, `update discussions set last_updated_at = ? where number in (${[...old, spam, binned, open].join(', ')})`, [idle])
  // Five resolved within the age.
  for (let i = 0; i < 5; i++) await api('POST', `/demo/discussions/${(await create(`Fresh ${i}`)).number}/resolve`, {})

  // Nothing is deleted while the site keeps them; the dry run of six months says 51.
  t.equal(await app.retention.run(), 0)
  t.match((await api('GET', '/demo/privacy?retention_months=6')).json(), { retention_months: null, retention_due: 51 })
  const set = await api('PUT', '/demo/privacy', { retention_months: 6 })
  t.match(set.json(), { retention_months: 6, retention_due: 51 })
  const [setLine] = await app.securityLog.changes({ siteId: ann.site.id, action: 'privacy.changed', limit: 1 })
  t.match(setLine, { actorId: ann.user.id, detail: { before: { retention_months: null }, after: { retention_months: 6 } } })

  t.equal(await app.retention.run(), 51)
  const lines = await app.securityLog.changes({ siteId: ann.site.id, action: 'retention.deleted', limit: 100 })
  t.equal(lines.length, 11, 'in batches of 5')
  const told = lines.flatMap((line) => (line.detail.numbers as string[]).map(Number)).sort((x, y) => x - y)
  t.same(told, [...old, spam].sort((x, y) => x - y), 'exactly the discussions past the age, each once')
  t.match(lines[0], { actor: 'the retention', via: 'service', actorId: null })

  // What was deleted is gone, its file too; what was not is whole.
  const left = await rawRows(app, 'select count(*) as n from comments c join discussions d on d.id = c.discussion_id where d.erased_at is not null')
  t.equal(Number(left[0]!.n), 0, 'no comment of theirs is left')
  t.same(await rawRows(app, 'select id from files'), [], 'the file went with its discussion')
  t.match((await api('GET', `/demo/discussions/${old[3]}`)).json(), { state: 'deleted', title: '(deleted)', comments_count: 0 })
  t.match((await api('GET', `/demo/discussions/${open}`)).json(), { state: 'new', title: 'Old but open', comments_count: 1 })
  t.match((await api('GET', `/demo/discussions/${binned}`)).json(), { state: 'deleted', title: 'Old and in the bin', comments_count: 1 }, 'the bin is not emptied by age')
  t.equal((await api('GET', '/demo/discussions/resolved')).json().total, 5)
  t.equal((await api('GET', '/demo/discussions')).json().total, 6)
  t.equal((await api('GET', '/demo/search?q=Old')).json().results.length, 1, 'search finds only the open one (the bin is not searched)')
  t.equal((await api('GET', '/demo/privacy')).json().retention_due, 0)
  t.equal(await app.retention.run(), 0, 'run again, nothing more')
  // Set back to keep them: nothing is due, whatever their age.
  t.match((await api('PUT', '/demo/privacy', { retention_months: null, erasure: 'delete' })).json(), { retention_months: null, erasure: 'delete', retention_due: 0 })
})

t.test('the retention runs in the background of every process, and says when it could not', async (t) => {
  const lines: string[] = []
  const { app, ann, api, create, questions, clock } = await discussionApp(t, { config: { retentionSeconds: 1 }, logStream: { write: (line) => void lines.push(line) } })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const { number } = await create({ title: 'Old', body: 'Old words.' }, questions.id)
  await api('POST', `/demo/discussions/${number}/resolve`, {})
  await rawStatement(app, 'update discussions set last_updated_at = ? where number = ?', [new Date(clock() - 13 * MONTH), number])
  await api('PUT', '/demo/privacy', { retention_months: 12 })
  await until('deleted by the loop', async () => (await api('GET', `/demo/discussions/${number}`)).json().state === 'deleted' || undefined)
  t.ok(lines.some((line) => line.includes('"retention_deleted":1')), 'and said so')
  // A failure is said, and the loop goes on.
  const retain = app.erasure.retain
  app.erasure.retain = async () => {
    throw new Error('the database went away')
  }
  t.teardown(() => void (app.erasure.retain = retain))
  await until('the failure said', async () => lines.some((line) => line.includes("could not delete the discussions past their site's retention")) || undefined)
  t.pass('the loop said why it could not')
})
