import { eq, sql } from '../drizzle.ts'
import type { Executor } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { slugify } from '../stores/categories.ts'
import { bumpCount, NO_ASSIGNEE, type CountedRow } from '../stores/discussion-counts.ts'
import { issueLegacyToken } from '../stores/legacy-tokens.ts'
import { BATCH, countKey, discussionDraws, peopleFor, seedCategories, seedCustomer, seedPolicy, seedSupporter, type Seeded } from '../stores/seed.ts'
import { bumpSiteVersion, type Site } from '../stores/sites.ts'
import { STAFF_ROLE } from '../stores/staff.ts'
import { emailKey } from '../stores/users.ts'
import type { PgDb } from './client.ts'
import { searchDocument, tsvectorOf } from '../../lib/search-text.ts'
import { postgresPort } from './engine.ts'
import { discussionChanges, discussions, sites } from '../schema/postgres.ts'
import { seededChanges, seededChangesTaken } from '../stores/changes.ts'

// `service-desk seed` on PostgreSQL: the draws of db/stores/seed.ts (the same seed gives the same
// discussions, comments, customers and counts on both engines; test/cli/seed.test.ts seeds one of
// each and compares every row), written in transactions of BATCH discussions, each a few multi-row
// inserts whose rows go in as one array per column (unnest), and the counts moved in the same
// transaction. A batch first takes the site's row lock, as a create does (db/stores/discussions.ts),
// so the service may write meanwhile and the numbers follow on.

const iso = (ms: number) => new Date(ms).toISOString()
/** One array, bound as one parameter (drizzle would spread it into a list). */
const array = (values: unknown[]) => sql.param(values)

/** The ids of the accounts with these addresses (lower case), made (in this order) where missing. */
async function accounts(q: Executor, clock: Clock, box: SecretBox, people: Array<{ email: string; name: string }>): Promise<number[]> {
  const ids = async () => {
    const { rows } = await q.execute<{ id: number; key: string }>(
      sql`SELECT id, email_key AS key FROM users WHERE email_key = ANY(${array(people.map((p) => emailKey(p.email)))}::text[])`,
    )
    return new Map(rows.map((row) => [row.key, row.id]))
  }
  const found = await ids()
  const missing = people.filter((p) => !found.has(emailKey(p.email)))
  if (missing.length > 0) {
    // Each account with its legacy token, as every account is made (docs/decisions.md).
    const tokens = missing.map(() => issueLegacyToken(clock, box).columns)
    const now = iso(clock())
    await q.execute(sql`
      INSERT INTO users (email, email_key, name, created_at, legacy_token_fingerprint, legacy_token_encrypted, legacy_token_expires_at)
      SELECT u.email, u.key, u.name, ${now}::timestamptz, u.fingerprint, u.sealed, u.expires
      FROM unnest(${array(missing.map((p) => p.email))}::text[], ${array(missing.map((p) => emailKey(p.email)))}::text[],
                  ${array(missing.map((p) => p.name))}::text[], ${array(tokens.map((t) => t.legacyTokenFingerprint))}::text[],
                  ${array(tokens.map((t) => t.legacyTokenEncrypted))}::text[], ${array(tokens.map((t) => t.legacyTokenExpiresAt.toISOString()))}::timestamptz[])
        WITH ORDINALITY AS u(email, key, name, fingerprint, sealed, expires, n)
      ORDER BY u.n
      ON CONFLICT (email_key) DO NOTHING`)
  }
  const all = missing.length > 0 ? await ids() : found
  return people.map((p) => all.get(emailKey(p.email))!)
}

/** Makes the accounts members of the site with this role, unless they are members already. */
async function join(q: Executor, siteId: number, userIds: number[], role: 'customer' | 'supporter', now: number): Promise<void> {
  await q.execute(sql`
    INSERT INTO memberships (site_id, user_id, role, created_at)
    SELECT ${siteId}::integer, u.id, ${role}::text, ${iso(now)}::timestamptz FROM unnest(${array(userIds)}::integer[]) AS u(id)
    ON CONFLICT DO NOTHING`)
}

/** Customers to ask (made or reused by address) and the site's supporters to answer (one made if it has none). */
async function peopleOf(db: PgDb, clock: Clock, box: SecretBox, site: Site, howMany: number, now: number) {
  return db.transaction(async (tx) => {
    const wanted = Array.from({ length: howMany }, (_, i) => seedCustomer(site, i))
    const customers = await accounts(tx, clock, box, wanted)
    await join(tx, site.id, customers, 'customer', now)
    // In the order SQLite reads them: its memberships primary key, (site, user).
    const { rows } = await tx.execute<{ id: number }>(
      sql`SELECT user_id AS id FROM memberships WHERE site_id = ${site.id} AND role = ${STAFF_ROLE} ORDER BY user_id`,
    )
    let supporters = rows.map((row) => row.id)
    if (supporters.length === 0) {
      supporters = await accounts(tx, clock, box, [seedSupporter(site)])
      await join(tx, site.id, supporters, STAFF_ROLE, now)
    }
    return { customers, supporters }
  })
}

/**
 * Adds `count` generated discussions (and their comments, customers and counts) to the site: what
 * seedSqliteDiscussions (db/sqlite/seed.ts) adds on SQLite for the same seed.
 */
export async function seedPostgresDiscussions(
  db: PgDb,
  clock: Clock,
  box: SecretBox,
  site: Site,
  count: number,
  options: { seed: number; onProgress?: (done: number, total: number) => void },
): Promise<Seeded> {
  const now = clock()
  const siteCategories = await seedCategories(postgresPort(db), clock, site)
  const policyId = await seedPolicy(postgresPort(db), clock, site)
  const people = await peopleOf(db, clock, box, site, peopleFor(count), now)
  const draw = discussionDraws(options.seed, count, now, siteCategories, people)

  let written = 0
  let commentsWritten = 0
  while (written < count) {
    const size = Math.min(BATCH, count - written)
    commentsWritten += await db.transaction(async (tx) => {
      // Held until commit: a discussion the service creates meanwhile takes the next number after these.
      await tx.select({ id: sites.id }).from(sites).where(eq(sites.id, site.id)).for('no key update')
      const [{ n }] = await tx.select({ n: sql<number | null>`max(${discussions.number})` }).from(discussions).where(eq(discussions.siteId, site.id))
      const first = (n ?? 0) + 1
      const rows = { number: [] as number[], title: [] as string[], permalink: [] as string[], state: [] as string[], before: [] as Array<string | null> }
      const more = { public: [] as boolean[], author: [] as number[], category: [] as number[], created: [] as string[], updated: [] as string[], comments: [] as number[] }
      const sla = { awaiting: [] as boolean[], channel: [] as string[], since: [] as Array<string | null>, replied: [] as Array<string | null>, first: [] as Array<string | null>, next: [] as Array<string | null>, due: [] as string[], breached: [] as string[], told: [] as string[], alert: [] as Array<string | null> }
      const at = (ms: number | null) => (ms === null ? null : iso(ms))
      const said = { number: [] as number[], position: [] as number[], author: [] as number[], bySupporter: [] as boolean[], body: [] as string[], via: [] as string[], at: [] as string[] }
      const moved = new Map<string, { row: CountedRow; n: number }>()
      const documents: string[] = []
      for (let i = 0; i < size; i++) {
        const { createdAt, category, customer, thread, last, state, before, isPublic, title, clock: kept } = draw(written + i)
        sla.awaiting.push(kept.awaitingTeam)
        sla.channel.push(kept.channel)
        sla.since.push(at(kept.replySince))
        sla.replied.push(at(kept.firstRepliedAt))
        sla.first.push(at(kept.firstReplyDueAt))
        sla.next.push(at(kept.nextReplyDueAt))
        sla.due.push(iso(kept.dueAt))
        sla.breached.push(kept.breached)
        sla.told.push(kept.told)
        sla.alert.push(at(kept.alertAt))
        documents.push(tsvectorOf(searchDocument(title, thread.map((c) => ({ body: c.body, internal: false })))))
        rows.number.push(first + i)
        rows.title.push(title)
        rows.permalink.push(slugify(title, 'discussion'))
        rows.state.push(state)
        rows.before.push(before)
        more.public.push(isPublic)
        more.author.push(customer)
        more.category.push(category.id)
        more.created.push(iso(createdAt))
        more.updated.push(iso(last.at))
        more.comments.push(thread.length)
        thread.forEach((c, k) => {
          said.number.push(first + i)
          said.position.push(k + 1)
          said.author.push(c.authorId)
          said.bySupporter.push(c.bySupporter)
          said.body.push(c.body)
          said.via.push(c.via)
          said.at.push(iso(c.at))
        })
        const row = { siteId: site.id, categoryId: category.id, state, public: isPublic, assigneeId: NO_ASSIGNEE }
        const key = countKey(row)
        moved.set(key, { row, n: (moved.get(key)?.n ?? 0) + 1 })
      }
      // In number order (WITH ORDINALITY), so the ids follow the numbers as on SQLite.
      await tx.execute(sql`
        INSERT INTO discussions (site_id, number, title, permalink, state, state_before_delete, public, author_id, category_id,
                                 created_at, updated_at, last_updated_at, comments_count, awaiting_team, channel, sla_policy_id,
                                 sla_reply_since, sla_first_replied_at, first_reply_due_at, next_reply_due_at, due_at, sla_breached, sla_told, sla_alert_at)
        SELECT ${site.id}::integer, d.number, d.title, d.permalink, d.state, d.before, d.public, d.author, d.category, d.created, d.updated, d.updated, d.comments,
               d.awaiting, d.channel, ${policyId}::integer, d.since, d.replied, d.first_due, d.next_due, d.due, d.breached, d.told, d.alert
        FROM unnest(${array(rows.number)}::integer[], ${array(rows.title)}::text[], ${array(rows.permalink)}::text[], ${array(rows.state)}::text[],
                    ${array(rows.before)}::text[], ${array(more.public)}::boolean[], ${array(more.author)}::integer[], ${array(more.category)}::integer[],
                    ${array(more.created)}::timestamptz[], ${array(more.updated)}::timestamptz[], ${array(more.comments)}::integer[],
                    ${array(sla.awaiting)}::boolean[], ${array(sla.channel)}::text[], ${array(sla.since)}::timestamptz[], ${array(sla.replied)}::timestamptz[],
                    ${array(sla.first)}::timestamptz[], ${array(sla.next)}::timestamptz[], ${array(sla.due)}::timestamptz[],
                    ${array(sla.breached)}::text[], ${array(sla.told)}::text[], ${array(sla.alert)}::timestamptz[])
          WITH ORDINALITY AS d(number, title, permalink, state, before, public, author, category, created, updated, comments,
                               awaiting, channel, since, replied, first_due, next_due, due, breached, told, alert, n)
        ORDER BY d.n`)
      await tx.execute(sql`
        INSERT INTO comments (discussion_id, number, author_id, by_supporter, body, internal, via, created_at)
        SELECT d.id, c.position, c.author, c.by_supporter, c.body, false, c.via, c.at
        FROM unnest(${array(said.number)}::integer[], ${array(said.position)}::integer[], ${array(said.author)}::integer[], ${array(said.bySupporter)}::boolean[],
                    ${array(said.body)}::text[], ${array(said.via)}::text[], ${array(said.at)}::timestamptz[])
          WITH ORDINALITY AS c(number, position, author, by_supporter, body, via, at, n)
        JOIN discussions d ON d.site_id = ${site.id} AND d.number = c.number
        ORDER BY c.n`)
      // Indexed in the batch's transaction, as every write indexes what it writes (db/stores/search.ts).
      await tx.execute(sql`
        INSERT INTO discussion_search (discussion_id, document)
        SELECT d.id, v.document::tsvector
        FROM unnest(${array(rows.number)}::integer[], ${array(documents)}::text[]) AS v(number, document)
        JOIN discussions d ON d.site_id = ${site.id} AND d.number = v.number`)
      // The feed tells of them (db/stores/changes.ts), as of every discussion made.
      await tx.execute(seededChanges({ discussionChanges, discussions }, site.id, first))
      await tx.execute(seededChangesTaken({ discussionChanges, sites }, site.id))
      for (const key of [...moved.keys()].sort()) await bumpCount(postgresPort(tx), moved.get(key)!.row, moved.get(key)!.n)
      await bumpSiteVersion(postgresPort(tx), site.id)
      return said.number.length
    })
    written += size
    options.onProgress?.(written, count)
  }
  return { discussions: written, comments: commentsWritten, customers: people.customers.length }
}
