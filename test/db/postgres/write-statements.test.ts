import pg from 'pg'
import t, { type Test } from 'tap'
import { databaseAddressOf, rawRows, supporterWithToken } from '../../fixtures/app.ts'
import { discussionApp } from '../../fixtures/discussions.ts'
import { parsePostgresAddress } from '../../../lib/database-address.ts'
import { POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'
import { until } from '../../fixtures/until.ts'

// Engines: both: it reads the statements the service sends to PostgreSQL, so it runs in the PostgreSQL pass alone.
// Every write of a site takes the site's row and holds it to COMMIT, so what a write says after it
// took that row is what the site's other writes wait for (docs/decisions.md, "Writes as light as
// reads (issue 75)"). A reply or a change takes it among its last statements, sent with its COMMIT
// (db/port.ts, lastly); who listens to the write's event (webhooks, the rules' version) is read
// before; and the answer reads no reply mail and no files that the write did not make.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

/** A statement sent, the connection (pg client) it was sent on, and whether one sent before it on that connection was still unanswered. */
interface Sent {
  text: string
  client: unknown
  behind: boolean
}

/** node-postgres's queues of a connection: what it was given and has not answered yet. */
type Queues = { _activeQuery: unknown; _queryQueue: unknown[]; _sentQueryQueue: unknown[] }

/**
 * Every statement any pg client of this process sends while `work` runs, in order, with the
 * connection it went on: the app's own background work (the search's backfill, the mailboxes'
 * loop) may run transactions on other connections of the pool meanwhile.
 */
async function statementsOf(t: Test, work: () => Promise<unknown>): Promise<Sent[]> {
  const sent: Sent[] = []
  const query = pg.Client.prototype.query
  const recording = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    const queues = this as unknown as Queues
    const behind = Boolean(queues._activeQuery) || queues._queryQueue.length > 0 || queues._sentQueryQueue.length > 0
    sent.push({ text: typeof config === 'string' ? config : String((config as { text?: string }).text), client: this, behind })
    return (query as (...args: unknown[]) => unknown).call(this, config, ...rest)
  }
  pg.Client.prototype.query = recording as typeof query
  t.teardown(() => void (pg.Client.prototype.query = query))
  try {
    await work()
  } finally {
    pg.Client.prototype.query = query
  }
  return sent.map(({ text, ...rest }) => ({ text: text.replace(/\s+/g, ' ').trim().toLowerCase(), ...rest }))
}

/** The texts of the statements. */
const textsOf = (statements: Sent[]) => statements.map((s) => s.text)

const SITE_ROW = /^(with taken as \(update "sites" set version|update "sites" set "version"|select "id" from "sites" where "sites"\."id" = \$1 for no key update)/
const READ = /^select /
/** The statements a write sends last, with its COMMIT (db/port.ts, lastly): the feed's, the counts', the day rows' and their times'. */
const LAST = /^insert into "(report_days|report_times|discussion_counts|discussion_changes)"/
const ANSWER_READS = /from "(outbox|attachments)"/

/** The texts of the statements sent on the write's connection: the one that takes the site's row. */
function ofTheWrite(statements: Sent[]): string[] {
  const taken = statements.find((s) => SITE_ROW.test(s.text))
  return taken ? textsOf(statements.filter((s) => s.client === taken.client)) : []
}

/** The statements from the one that takes the site's row to COMMIT, on the write's connection. */
function afterSiteRow(t: Test, statements: Sent[]): string[] {
  const own = ofTheWrite(statements)
  t.ok(own.length > 0, 'the write takes the site\'s row')
  const at = own.findIndex((text) => SITE_ROW.test(text))
  const committed = own.indexOf('commit', at)
  t.ok(committed > at, 'and commits after')
  return own.slice(at + 1, committed)
}

/** A site whose webhook hears every event the writes tell, and whose rule is not met: both are asked. */
async function listenedDesk(t: Test) {
  const desk = await discussionApp(t)
  t.equal(desk.app.database.kind, 'postgres', 'the app runs on PostgreSQL')
  await desk.app.webhooks.add(desk.ann.site.id, { url: 'https://hooks.example.test/in', events: ['discussion.created', 'comment.created', 'discussion.updated'] })
  await desk.app.rules.add(desk.ann.site.id, { name: 'Never', events: ['created', 'customer_replied'], conditions: { words: ['never-said'] }, actions: [{ type: 'add_tags', tags: ['ruled'] }] }, { id: desk.ann.user.id, name: desk.ann.user.email, via: 'api' })
  return desk
}

t.test('a reply: no read once the site\'s row is taken, and its answer reads no mail or files it did not make', options, async (t) => {
  const desk = await listenedDesk(t)
  const { number } = await desk.create()
  let answer: { statusCode: number; json(): { delivery: unknown; attachments: unknown[] } } | undefined
  const statements = await statementsOf(t, async () => (answer = await desk.api('POST', `/demo/discussions/${number}/comments`, { body: 'An answer.' })))
  t.equal(answer!.statusCode, 201)
  t.match(answer!.json(), { delivery: null, attachments: [] })
  const held = afterSiteRow(t, statements)
  t.same(held.filter((text) => !LAST.test(text)), [], 'once the site\'s row is taken, only the last statements (the day rows, the counts) before COMMIT')
  const own = ofTheWrite(statements)
  const eventAt = own.findIndex((text) => text.startsWith('insert into "outbox"'))
  t.ok(eventAt > own.indexOf('begin') && eventAt < own.findIndex((text) => SITE_ROW.test(text)), 'the webhook\'s event is queued in the transaction, before the site\'s row is taken')
  t.ok(textsOf(statements).some((text) => /from "sites" left join "webhooks"/.test(text)), 'its listeners read, in one statement')
  t.same(textsOf(statements).filter((text) => ANSWER_READS.test(text) && READ.test(text)), [], 'no read of a reply mail or files it did not make')
  const queued = await rawRows(desk.app, "SELECT count(*) AS n FROM outbox WHERE kind = 'webhook'")
  t.equal(Number(queued[0]!.n), 2, 'the create\'s event and the reply\'s, each queued once')
})

t.test('a reply on a discussion another supporter owns: its owner is told before the site\'s row is taken', options, async (t) => {
  const desk = await listenedDesk(t)
  const bob = await supporterWithToken(desk.app, { email: 'bob@example.test' })
  const { number } = await desk.create()
  t.equal((await desk.api('PUT', `/demo/discussions/${number}`, { assignee: bob.user.id })).statusCode, 200)
  const statements = await statementsOf(t, () => desk.api('POST', `/demo/discussions/${number}/comments`, { body: 'An answer.' }))
  const held = afterSiteRow(t, statements)
  t.same(held.filter((text) => READ.test(text)), [], 'nothing read while the site\'s other writes wait')
  const told = await rawRows(desk.app, "SELECT payload FROM outbox WHERE kind = 'notification' ORDER BY id")
  const subjects = told.map((row) => JSON.parse(String(row.payload)) as { to: string; subject: string }).map((mail) => `${mail.to} ${mail.subject}`)
  t.same(subjects, ['bob@example.test [Site demo] #1 is yours: A question', 'bob@example.test [Site demo] Reply on #1: A question'], 'Bob told it is his, then of the reply, once')
})

t.test('a new discussion: its listeners read before it takes the site\'s row; its answer reads no mail or files it did not make', options, async (t) => {
  const desk = await listenedDesk(t)
  let answer: { statusCode: number } | undefined
  const statements = await statementsOf(t, async () => (answer = await desk.api('POST', `/demo/categories/${desk.questions.id}/discussions`, { title: 'A question', body: 'Some words.' })))
  t.equal(answer!.statusCode, 201)
  const held = afterSiteRow(t, statements)
  t.same(held.filter((text) => /"webhooks"|"rules_version"/.test(text)), [], 'no read of who listens while the site\'s row is held')
  t.same(held.filter((text) => READ.test(text) && /from "(categories|memberships)"/.test(text)), [], 'nor of its category or of who hears of it')
  const own = statements.filter((s) => s.client === statements.find((taken) => SITE_ROW.test(taken.text))!.client)
  const insert = own.findIndex((s) => s.text.startsWith('insert into "discussions"'))
  t.match(own[insert + 1], { text: /^insert into "comments"/, behind: true }, "its opening post sent right after its discussion's insert, before that was answered: one round trip")
  t.same(textsOf(statements).filter((text) => ANSWER_READS.test(text) && READ.test(text)), [], 'no read of a reply mail or files it did not make')
})

t.test("a supporter's new discussion whose site's rules moved while it waited for the site's row: the SLA policies under the row apply", options, async (t) => {
  // Its SLA is first that of the policies of the rules' version it read with who listens, before
  // it takes the site's row (db/stores/discussions.ts, insertEarlyIn). Another transaction holds
  // the row meanwhile, removes the only policy and moves the version, and commits.
  const desk = await discussionApp(t)
  await desk.app.users.setAdministrator(desk.ann.site.id, desk.ann.user.id, true)
  const policy = await desk.api('POST', '/demo/sla_policies', { name: 'Standard', first_reply_minutes: 60, resolution_minutes: 600 })
  t.equal(policy.statusCode, 201)
  t.match((await desk.create({ title: 'Before' })).sla, { policy: { id: policy.json().id } }, 'the policy applies to a supporter\'s discussion')

  const { connectionString, schema } = parsePostgresAddress(databaseAddressOf(desk.app))
  const other = new pg.Client({ connectionString, options: `-c search_path=${schema}` })
  await other.connect()
  t.teardown(() => other.end())
  await other.query('BEGIN')
  await other.query('SELECT id FROM sites WHERE id = $1 FOR UPDATE', [desk.ann.site.id])
  const creating = desk.api('POST', `/demo/categories/${desk.questions.id}/discussions`, { title: 'While it changed', body: 'Words.' })
  await until('the create waits for the site\'s row', async () => {
    const waiting = await rawRows(desk.app, "select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%update \"sites\"%'")
    return waiting.length > 0
  })
  await other.query('DELETE FROM sla_policies WHERE id = $1', [policy.json().id])
  await other.query('UPDATE sites SET rules_version = rules_version + 1 WHERE id = $1', [desk.ann.site.id])
  await other.query('COMMIT')
  const made = await creating
  t.equal(made.statusCode, 201)
  t.equal(made.json().sla, null, 'no policy: the one it read before was removed under the row')
  t.equal((await desk.api('GET', `/demo/discussions/${made.json().number}`)).json().sla, null, 'and none is kept')
})

t.test('a customer\'s new discussion in a category that gives them in turn: the turn read under the site\'s row', options, async (t) => {
  const desk = await listenedDesk(t)
  await desk.app.categories.change(desk.ann.site.id, desk.problems.id, { roundRobin: true })
  let answer: { statusCode: number; json(): unknown } | undefined
  const asked = { title: 'Help', body: 'It broke.', author_email: 'carol@customer.example' }
  const statements = await statementsOf(t, async () => (answer = await desk.api('POST', `/demo/categories/${desk.problems.id}/discussions`, asked)))
  t.equal(answer!.statusCode, 201)
  t.match(answer!.json(), { assignee: { id: desk.ann.user.id } }, 'given to the supporter next in turn')
  const held = afterSiteRow(t, statements)
  t.ok(held.some((text) => READ.test(text) && /from "categories"/.test(text)), 'the category read again once the row is taken')
  t.ok(held.some((text) => text.startsWith('update "categories" set "last_assignee_id"')), 'and its turn moved')
})

t.test('a change of state: who listens read before the site\'s row', options, async (t) => {
  const desk = await listenedDesk(t)
  const { number } = await desk.create()
  let answer: { statusCode: number } | undefined
  const statements = await statementsOf(t, async () => (answer = await desk.api('POST', `/demo/discussions/${number}/resolve`)))
  t.equal(answer!.statusCode, 200)
  const held = afterSiteRow(t, statements)
  t.same(held.filter((text) => /"webhooks"|"rules_version"/.test(text)), [], 'no read of who listens while the site\'s row is held')
  t.same(held.filter((text) => !LAST.test(text)), [], 'nothing but the last statements (the counts, the day rows) between it and COMMIT')
})

t.test("the site's row a write of this process moved is kept, not read again; another's change between is read", options, async (t) => {
  const desk = await listenedDesk(t)
  const siteId = desk.ann.site.id
  const SITE_READ = /^select "id", "permalink", "name", .* from "sites" where "sites"\."id" = \$1$/
  const siteReads = (statements: Sent[]) => textsOf(statements).filter((text) => SITE_READ.test(text)).length
  const versionNow = async () => Number((await rawRows(desk.app, 'SELECT version FROM sites WHERE id = ?', [siteId]))[0]!.version)
  await desk.create()
  let site: { headers: Record<string, unknown>; json(): { name: string } } | undefined
  t.equal(siteReads(await statementsOf(t, async () => (site = await desk.api('GET', '/demo')))), 0, "after the create, the site's row is the one kept")
  t.match(site!.headers.etag, new RegExp(`^"s${await versionNow()}-`), 'its validator the version the write moved it to')
  t.equal(siteReads(await statementsOf(t, () => desk.api('POST', '/demo/discussions/1/comments', { body: 'An answer.' }))), 0, 'nor read by the next write')

  // Another process renames the site: the next request reads the row (the version it reads is not the one kept).
  await rawRows(desk.app, "UPDATE sites SET name = 'Renamed desk' WHERE id = ?", [siteId])
  t.equal(siteReads(await statementsOf(t, () => desk.api('POST', '/demo/discussions/1/comments', { body: 'Another.' }))), 1, 'a rename by another: the next request reads the row')
  t.equal(siteReads(await statementsOf(t, async () => (site = await desk.api('GET', '/demo')))), 0, "and its write keeps it moved")
  t.equal(site!.json().name, 'Renamed desk')

  // Renamed again between this process's last read and its next write: the write moves the version
  // by two from the one kept, and the row is read again rather than taken for the kept one.
  await rawRows(desk.app, "UPDATE sites SET name = 'Renamed twice' WHERE id = ?", [siteId])
  await desk.app.discussions.reply({ siteId, number: 1, body: 'By the store.', internal: false, via: 'api', supporterId: desk.ann.user.id })
  t.equal(siteReads(await statementsOf(t, async () => (site = await desk.api('GET', '/demo')))), 1, "the row read again: the version moved by more than this process's write")
  t.equal(site!.json().name, 'Renamed twice', "the other's change seen")
  t.match(site!.headers.etag, new RegExp(`^"s${await versionNow()}-`), 'its validator the version now')
})
