import { and, eq, sql } from '../drizzle.ts'
import type { Db } from './client.ts'
import { comments, discussionChanges, discussionCounts, discussions, memberships, sites, users } from '../schema/sqlite.ts'
import { seededChanges, seededChangesTaken } from '../stores/changes.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { slugify } from '../stores/categories.ts'
import { NO_ASSIGNEE, type CountedRow } from '../stores/discussion-counts.ts'
import { issueLegacyToken } from '../stores/legacy-tokens.ts'
import { BATCH, countKey, discussionDraws, peopleFor, seedCategories, seedCustomer, seedPolicy, seedSupporter, type Seeded } from '../stores/seed.ts'
import type { Site } from '../stores/sites.ts'
import { STAFF_ROLE } from '../stores/staff.ts'
import { emailKey } from '../stores/users.ts'
import { sqlitePort } from './engine.ts'
import { documentWriter } from './search.ts'
import { searchDocument } from '../../lib/search-text.ts'

// `service-desk seed` on SQLite: the draws of db/stores/seed.ts, written through statements
// prepared once and run synchronously, in one IMMEDIATE transaction per BATCH discussions that
// moves the counts too. A command-line path: the connection is the command's own, so nothing
// else waits on the gate (db/sqlite/gate.ts) meanwhile.

/** Customers to ask (made or reused by address) and the site's supporters to answer (one made if it has none). */
function peopleOf(db: Db, clock: Clock, box: SecretBox, site: Site, howMany: number) {
  const now = new Date(clock())
  const byKey = db.select({ id: users.id }).from(users).where(eq(users.emailKey, sql.placeholder('key'))).prepare()
  const member = ({ email, name }: { email: string; name: string }, role: 'customer' | 'supporter') => {
    const id =
      byKey.get({ key: emailKey(email) })?.id ??
      db
        .insert(users)
        // Each account with its legacy token, as every account is made (docs/decisions.md).
        .values({ email, emailKey: emailKey(email), name, createdAt: now, ...issueLegacyToken(clock, box).columns })
        .returning({ id: users.id })
        .get().id
    db.insert(memberships).values({ siteId: site.id, userId: id, role, createdAt: now }).onConflictDoNothing().run()
    return id
  }
  const customers = Array.from({ length: howMany }, (_, i) => member(seedCustomer(site, i), 'customer'))
  let supporters = db
    .select({ id: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.siteId, site.id), eq(memberships.role, STAFF_ROLE)))
    .all()
    .map((row) => row.id)
  if (supporters.length === 0) supporters = [member(seedSupporter(site), STAFF_ROLE)]
  return { customers, supporters }
}

/** Adds `count` generated discussions (and their comments, customers and counts) to the site. */
export async function seedSqliteDiscussions(
  db: Db,
  clock: Clock,
  box: SecretBox,
  site: Site,
  count: number,
  options: { seed?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<Seeded> {
  const p = (name: string) => sql.placeholder(name)
  const siteCategories = await seedCategories(sqlitePort(db), clock, site)
  const policyId = await seedPolicy(sqlitePort(db), clock, site)
  const people = db.transaction(() => peopleOf(db, clock, box, site, peopleFor(count)))
  const draw = discussionDraws(options.seed ?? 1, count, clock(), siteCategories, people)

  const insertDiscussion = db
    .insert(discussions)
    .values({
      siteId: site.id,
      number: p('number'),
      title: p('title'),
      permalink: p('permalink'),
      state: p('state'),
      stateBeforeDelete: p('before'),
      public: p('public'),
      authorId: p('authorId'),
      categoryId: p('categoryId'),
      createdAt: p('createdAt'),
      updatedAt: p('updatedAt'),
      lastUpdatedAt: p('updatedAt'),
      commentsCount: p('commentsCount'),
      awaitingTeam: p('awaitingTeam'),
      channel: p('channel'),
      slaPolicyId: p('policyId'),
      // Bound as they are given (milliseconds, or null), not through the columns.
      slaReplySince: sql`${p('replySince')}`,
      slaFirstRepliedAt: sql`${p('firstRepliedAt')}`,
      firstReplyDueAt: sql`${p('firstReplyDueAt')}`,
      nextReplyDueAt: sql`${p('nextReplyDueAt')}`,
      dueAt: sql`${p('dueAt')}`,
      slaBreached: p('breached'),
      slaTold: p('told'),
      slaAlertAt: sql`${p('alertAt')}`,
    })
    .prepare()
  const insertComment = db
    .insert(comments)
    .values({
      discussionId: p('discussionId'),
      number: p('number'),
      authorId: p('authorId'),
      bySupporter: p('bySupporter'),
      body: p('body'),
      internal: false,
      via: p('via'),
      createdAt: p('at'),
    })
    .prepare()
  const bump = db
    .insert(discussionCounts)
    .values({ siteId: p('siteId'), categoryId: p('categoryId'), state: p('state'), public: p('public'), count: p('n') })
    .onConflictDoUpdate({
      target: [discussionCounts.siteId, discussionCounts.categoryId, discussionCounts.state, discussionCounts.public, discussionCounts.assigneeId],
      set: { count: sql`${discussionCounts.count} + excluded.count` },
    })
    .prepare()
  const newVersion = db
    .update(sites)
    .set({ version: sql`${sites.version} + 1` })
    .where(eq(sites.id, site.id))
    .prepare()
  const lastNumber = db
    .select({ n: sql<number | null>`max(${discussions.number})` })
    .from(discussions)
    .where(eq(discussions.siteId, site.id))
    .prepare()

  const writeDocument = documentWriter(db)

  let written = 0
  let commentsWritten = 0
  while (written < count) {
    const size = Math.min(BATCH, count - written)
    db.transaction(
      () => {
        const first = (lastNumber.get()?.n ?? 0) + 1
        const moved = new Map<string, { row: CountedRow; n: number }>()
        for (let i = 0; i < size; i++) {
          const { createdAt, category, customer, thread, last, state, before, isPublic, title, clock: sla } = draw(written + i)
          const { lastInsertRowid } = insertDiscussion.run({
            number: first + i,
            title,
            permalink: slugify(title, 'discussion'),
            state,
            before,
            public: isPublic,
            authorId: customer,
            categoryId: category.id,
            createdAt: new Date(createdAt),
            updatedAt: new Date(last.at),
            commentsCount: thread.length,
            awaitingTeam: sla.awaitingTeam,
            channel: sla.channel,
            policyId,
            replySince: sla.replySince,
            firstRepliedAt: sla.firstRepliedAt,
            firstReplyDueAt: sla.firstReplyDueAt,
            nextReplyDueAt: sla.nextReplyDueAt,
            dueAt: sla.dueAt,
            breached: sla.breached,
            told: sla.told,
            alertAt: sla.alertAt,
          })
          thread.forEach((c, n) =>
            insertComment.run({
              discussionId: Number(lastInsertRowid),
              number: n + 1,
              authorId: c.authorId,
              bySupporter: c.bySupporter,
              body: c.body,
              via: c.via,
              at: new Date(c.at),
            }),
          )
          commentsWritten += thread.length
          // Indexed in the batch's transaction, as every write indexes what it writes (db/stores/search.ts).
          writeDocument(Number(lastInsertRowid), searchDocument(title, thread.map((c) => ({ body: c.body, internal: false }))), true)
          const row = { siteId: site.id, categoryId: category.id, state, public: isPublic, assigneeId: NO_ASSIGNEE }
          const key = countKey(row)
          moved.set(key, { row, n: (moved.get(key)?.n ?? 0) + 1 })
        }
        // The feed tells of them (db/stores/changes.ts), as of every discussion made.
        db.run(seededChanges({ discussionChanges, discussions } as never, site.id, first))
        db.run(seededChangesTaken({ discussionChanges, sites } as never, site.id))
        for (const key of [...moved.keys()].sort()) {
          const { row, n } = moved.get(key)!
          bump.run({ ...row, public: row.public ? 1 : 0, n })
        }
        // The site's version moves on with the batch, as with every change (bumpSiteVersion).
        newVersion.run()
      },
      { behavior: 'immediate' },
    )
    written += size
    options.onProgress?.(written, count)
  }
  return { discussions: written, comments: commentsWritten, customers: people.customers.length }
}
