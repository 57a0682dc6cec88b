import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { noticeMail } from '../../plugins/expiry-notices.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { BASE_URL, buildTestApp, SITE_URL, supporterWithToken, testClock } from '../fixtures/app.ts'
import { logCapture } from '../fixtures/log.ts'
import { mailServer, readMail, type Mail } from '../fixtures/mail.ts'
import { onSqlite, postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'
import { buildApp } from '../../app.ts'
import { until } from '../fixtures/until.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 18, item 5: mails 7 days before a personal token expires and on its last day, sent to a
// real SMTP server (smtp-server, started here) by the service's own transport (nodemailer).

const FROM = 'Service Desk <desk@example.test>'

const subjectOf = (mail: Mail) => readMail(mail).subject

t.test('a mail 7 days before and one on the last day, to the owner, never with the token value', async (t) => {
  const smtp = await mailServer(t)
  const log = logCapture()
  const { app, clock } = await buildTestApp(t, { config: { mail: { smtpUrl: smtp.url, from: FROM } }, logStream: log.stream })
  const ann = await supporterWithToken(app, { email: 'ann@example.test', expiresInDays: 30 })
  const short = await supporterWithToken(app, { email: 'ann@example.test', expiresInDays: 7 })
  await supporterWithToken(app, { email: 'ann@example.test', expiresInDays: 90 })
  const revoked = await supporterWithToken(app, { email: 'ann@example.test', expiresInDays: 30 })
  await app.tokens.revoke(revoked.site.id, revoked.token.id)
  const gone = await supporterWithToken(app, { email: 'bob@example.test', expiresInDays: 30 })
  await app.users.removeStaff(gone.site.id, gone.user.id)
  const values = [ann, short, revoked, gone].map((made) => made.value)

  t.equal(await app.expiryNotices.sendDue(), 0, 'at creation: no week notice for a token made to last 7 days')
  clock.advance(6 * DAY_MS + 3_600_000)
  t.equal(await app.expiryNotices.sendDue(), 1, 'the 7-day token on its last day')
  t.equal(await app.expiryNotices.sendDue(), 0, 'once')
  clock.advance(17 * DAY_MS)
  t.equal(await app.expiryNotices.sendDue(), 1, '7 days before the 30-day token; not the revoked one, nor the one whose owner left the staff')
  clock.advance(6 * DAY_MS)
  t.equal(await app.expiryNotices.sendDue(), 1, 'the 30-day token on its last day')
  clock.advance(2 * DAY_MS)
  t.equal(await app.expiryNotices.sendDue(), 0, 'nothing for an expired token')

  t.same(smtp.mails.map((mail) => [mail.from, mail.to, subjectOf(mail)]), [
    ['desk@example.test', ['ann@example.test'], 'Your API token "test token" on Site demo expires within a day'],
    ['desk@example.test', ['ann@example.test'], 'Your API token "test token" on Site demo expires on 2026-03-31'],
    ['desk@example.test', ['ann@example.test'], 'Your API token "test token" on Site demo expires within a day'],
  ])
  t.match(readMail(smtp.mails[1]).text, 'https://help.example.test/demo/profile/api_tokens', 'links to the page where a new one is made')
  t.match(readMail(smtp.mails[1]).text, /expires on 2026-03-31 12:00 UTC/)
  for (const mail of smtp.mails) for (const value of values) t.notMatch(mail.raw, value.slice(12), 'no token value in a mail')
  t.same([...new Set(smtp.state.logins)], ['mailer:s3cret-smtp'], 'the credentials of SERVICE_SMTP_URL are used')
  t.equal(log.entries().filter((entry) => entry.msg === 'token expiry notice sent').length, 3)
  t.notMatch(log.text(), 's3cret-smtp', 'the SMTP password is in no log line')
})

t.test('a mail the server turns away is tried again at the next round; a failed look is logged', async (t) => {
  const smtp = await mailServer(t)
  const log = logCapture()
  const { app, clock } = await buildTestApp(t, { config: { mail: { smtpUrl: smtp.url, from: FROM } }, logStream: log.stream })
  await supporterWithToken(app, { expiresInDays: 30 })
  clock.advance(23 * DAY_MS + 1)
  smtp.state.refuse = true
  // The app's own first look (at its start, in the background) may be the one that finds the
  // notice due on a loaded machine: either round's refusal will do.
  t.equal(await app.expiryNotices.sendDue(), 0)
  const warning = await until('the refusal logged', () => log.entries().find((entry) => entry.msg === 'could not send a token expiry notice; trying again in an hour'))
  t.match(warning, { level: 40, token_id: 1, notice: 'week', err: { message: /mailbox unavailable/ } })
  smtp.state.refuse = false
  await until('the claim given back, and the notice sent', async () => (await app.expiryNotices.sendDue()) === 1 || smtp.mails.length > 0)
  t.equal(smtp.mails.length, 1, 'sent once')
})

/** One database for several apps (processes): a file on SQLite, a schema of its own on PostgreSQL. */
async function sharedDatabase(t: Test) {
  const secret = randomBytes(32).toString('hex')
  if (TEST_ENGINE === 'postgres') return { databaseAddress: await postgresTestAddress(t), secret }
  const folder = mkdtempSync(join(tmpdir(), 'notices-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  return { databaseAddress: join(folder, 'service.db'), secret }
}

/** An app (a process) on that database with its own clock, `days` ahead of START. */
async function appOn(t: Test, database: { databaseAddress: string; secret: string }, options: { days?: number; mail?: { smtpUrl: string; from: string }; logStream?: { write(line: string): void } } = {}) {
  const clock = testClock()
  clock.advance((options.days ?? 0) * DAY_MS)
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...database, mail: options.mail }, clock, logStream: options.logStream })
  t.teardown(() => app.close())
  await app.ready()
  return { app, clock }
}

t.test('the notices go in the background, from start; a failed look is logged; without SERVICE_SMTP_URL nothing is sent', async (t) => {
  const smtp = await mailServer(t)
  const database = await sharedDatabase(t)
  const { app: quiet } = await appOn(t, database)
  await supporterWithToken(quiet, { expiresInDays: 7 })
  t.equal(await appOn(t, database, { days: 6.5 }).then(({ app }) => app.expiryNotices.sendDue()), 0, 'no SERVICE_SMTP_URL: no mail')

  const log = logCapture()
  const { app: failing } = await appOn(t, database, { days: 6.5, mail: { smtpUrl: smtp.url, from: FROM }, logStream: log.stream })
  // Its first round runs just after start, in the background: it meets this failure.
  failing.tokens.claimExpiryNotices = async () => {
    throw new Error('database away')
  }
  for (let i = 0; i < 200 && !log.text().includes('could not look for token expiry notices'); i++) await new Promise((r) => setTimeout(r, 10))
  t.match(log.text(), 'database away')
  t.equal(smtp.mails.length, 0)

  // A process started with mail while the notice is due sends it without being asked.
  await appOn(t, database, { days: 6.5, mail: { smtpUrl: smtp.url, from: FROM } })
  for (let i = 0; i < 200 && smtp.mails.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
  t.equal(smtp.mails.length, 1, 'sent by the round at start')
})

t.test('two processes on one database send each notice once', async (t) => {
  const smtp = await mailServer(t)
  const database = await sharedDatabase(t)
  const mail = { smtpUrl: smtp.url, from: FROM }
  const { app: maker } = await appOn(t, database)
  for (let i = 0; i < 10; i++) await supporterWithToken(maker, { expiresInDays: 30 })
  const apps = [await appOn(t, database, { days: 0, mail }), await appOn(t, database, { days: 0, mail })]
  for (const { clock } of apps) clock.advance(23 * DAY_MS + 1)
  const sent = await Promise.all(apps.map(({ app }) => app.expiryNotices.sendDue()))
  // Each process's first round runs as it starts, in the background: on a loaded machine it may look
  // only after the clocks moved, and send some (or all) itself. Closed, each has finished its round.
  await Promise.all(apps.map(({ app }) => app.close()))
  t.equal(smtp.mails.length, 10, `10 mails between them (${sent.join(' + ')} by the calls, the rest by the rounds at start)`)
  t.equal(new Set(smtp.mails.map((mail) => mail.to[0])).size, 10, 'one to each owner')
})

t.test('the mail says what and when, and where to make a new token', onSqlite("a notice mail's words"), async (t) => {
  const notice = {
    tokenId: 1,
    name: 'Nightly export',
    access: 'read' as const,
    createdAt: new Date('2026-01-01T00:00:00Z'),
    expiresAt: new Date('2026-04-01T09:30:00Z'),
    email: 'ann@example.test',
    userName: '',
    disabled: false,
    staff: true,
    permalink: 'demo',
    siteName: 'Demo',
  }
  const week = noticeMail(notice, 'week', 'https://help.example.test/demo/profile/api_tokens')
  t.equal(week.subject, 'Your API token "Nightly export" on Demo expires on 2026-04-01')
  t.match(week.text, /^Hello ann@example\.test,\n\nyour personal API token "Nightly export" \(Read only\) on Demo expires on 2026-04-01 09:30 UTC\./)
  t.match(noticeMail({ ...notice, userName: 'Ann', access: 'write' }, 'day', 'x').text, /^Hello Ann,\n\nyour personal API token "Nightly export" \(Read and write\)/)
})
