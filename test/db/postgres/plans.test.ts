import t from 'tap'
import { rawRows, rawStatement, supporterWithToken } from '../../fixtures/app.ts'
import { discussionApp } from '../../fixtures/discussions.ts'
import { checkPlannedOnce, plansOf, POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'

// Engines: both: it reads how PostgreSQL planned the service's statements, so it runs in the PostgreSQL pass alone.
// The service's statements are prepared once and planned once on a connection: a constant bound as
// a parameter (a role, a flag) whose share of the rows PostgreSQL's statistics know, or a statement
// built again at each call, made it plan again at every call (docs/decisions.md, "Plans that are
// made once").

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

t.test("a new discussion's reads of the team: who hears of it, whose turn it is, the site's mailbox", options, async (t) => {
  const desk = await discussionApp(t)
  const bob = await supporterWithToken(desk.app, { email: 'bob@example.test' })
  await desk.app.users.setNotifications(desk.ann.site.id, bob.user.id, { newDiscussions: true, owned: true, digest: false })
  await desk.app.categories.change(desk.ann.site.id, desk.problems.id, { roundRobin: true })
  // A site's customers are its members too, as many as its staff is few: what PostgreSQL's
  // statistics say of the memberships after ANALYZE, as in the bench's site.
  await rawStatement(desk.app, `WITH made AS (INSERT INTO users (email, email_key, name, created_at)
      SELECT 'customer' || n || '@customer.example', 'customer' || n || '@customer.example', 'Customer ' || n, now() FROM generate_series(1, 2000) AS n RETURNING id)
    INSERT INTO memberships (site_id, user_id, role, created_at) SELECT $1::int, id, 'customer', now() FROM made`, [desk.ann.site.id])
  await rawStatement(desk.app, 'ANALYZE users, memberships', [])
  const creates = async () => {
    // A customer's, as a supporter posts it for them: given in turn.
    for (let i = 0; i < 12; i++) await desk.create({ title: `Question ${i}`, author_email: 'carol@customer.example' }, desk.problems.id)
  }
  const statements = ['notifications_notifyNew_all', 'assignment_next_in_turn', 'outbox_site_mailbox']
  const plans = new Map<string, Awaited<ReturnType<typeof plansOf>>>()
  // One name at a time: plansOf watches one statement while the creates run.
  for (const name of statements) plans.set(name, await plansOf(name, creates))
  for (const name of statements) checkPlannedOnce(t, plans.get(name)!, name)
})

t.test("a discussion's comments: their reply mail and their mail's origins read by one statement each, planned once, for one comment or a page", options, async (t) => {
  const desk = await discussionApp(t)
  const { number } = await desk.create()
  for (let i = 0; i < 3; i++) t.equal((await desk.api('POST', `/demo/discussions/${number}/comments`, { body: `Answer ${i}` })).statusCode, 201)
  const pages = async () => {
    for (let i = 0; i < 12; i++) t.equal((await desk.api('GET', `/demo/discussions/${number}/comments`)).statusCode, 200)
  }
  checkPlannedOnce(t, await plansOf('outbox_deliveries_of', pages), 'their reply mail')
  // Only comments that came by mail are asked their origins (routes/api/discussions/context.ts): asked here of the store.
  const ids = (await rawRows(desk.app, 'SELECT id FROM comments ORDER BY id')).map((row) => Number(row.id))
  const origins = async () => {
    for (let i = 0; i < 12; i++) t.same(await desk.app.mailboxes.origins(ids.slice(0, 1 + (i % ids.length))), new Map(), 'none came by mail')
  }
  checkPlannedOnce(t, await plansOf('mail_origins_of', origins), "their mail's origins")
})
