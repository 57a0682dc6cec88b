import { and, eq, sql } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { discussions, memberships } from '../sqlite/schema.ts'
import type { CommentVia, DiscussionState } from '../values.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { createCategoryStore, slugify, type Category } from './categories.ts'
import { createDiscussionCounts, type CountedRow } from './discussion-counts.ts'
import { prepareCommentInsert } from './discussions.ts'
import type { Site } from './sites.ts'
import type { SyncUserStore } from './users.ts'
import { STAFF_ROLE } from './staff.ts'

// Fills a site with realistic generated discussions for demos and benchmarks: customers asking,
// supporters answering, states that follow the rules of docs/decisions.md. Deterministic for a given
// seed. Rows go in through prepared statements in transactions of BATCH discussions, and the
// counts move in the same transactions, so a million discussions take minutes, not hours.

export const BATCH = 2_000
const SPAN_MS = 730 * DAY_MS

/** mulberry32: a small, fast, seedable generator; Math.random cannot be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const FIRST = 'Ada Grace Alan Linus Margaret Ken Barbara Dennis Frances Edsger Radia Tim Hedy John Sophie Yukihiro'.split(' ')
export const LAST = 'Lovelace Hopper Turing Torvalds Hamilton Thompson Liskov Ritchie Allen Dijkstra Perlman Lee Lamarr McCarthy Wilson Matsumoto'.split(' ')
const THINGS = [
  'invoice',
  'password reset email',
  'API token',
  'mobile app',
  'CSV export',
  'two-factor login',
  'billing address',
  'webhook',
  'dashboard',
  'search',
  'team invitation',
  'PDF receipt',
  'calendar sync',
  'single sign-on',
]
const TROUBLES = [
  'does not work since the update',
  'shows the wrong total',
  'is very slow today',
  'keeps logging me out',
  'fails with an error',
  'is missing from my account',
  'sends duplicates',
  'looks broken on my phone',
]
const QUESTIONS = ['How do I change the', 'Where can I find the', 'Can I turn off the', 'Is there a limit on the', 'Who can see the']
const OPENINGS = ['Hello,', 'Hi there,', 'Good morning,', 'Hi team,', 'Hello support,']
const SENTENCES = [
  'I tried again after clearing the cache, with the same result.',
  'This started yesterday afternoon and happens every time.',
  'Two of my colleagues see the same thing on their accounts.',
  'I attached nothing sensitive, but I can send a screenshot if that helps.',
  'We rely on this for our month-end reporting, so it is somewhat urgent.',
  'The documentation did not mention this case as far as I can tell.',
  'It works in the browser but not in the desktop client.',
  'Could you tell me whether this is expected or a bug?',
]
const ANSWERS = [
  'Thanks for the report. I could reproduce it and we have a fix going out this week.',
  'You can change that under Settings, then Account; let me know if the option is missing for you.',
  'I have reset it on our side. Could you try once more and tell us whether it works now?',
  'That is expected for accounts on the older plan, but I have switched yours so it behaves as you describe.',
  'Our engineers are looking into it; I will update this discussion as soon as I hear back.',
]
const FOLLOW_UPS = [
  'It works now, thank you!',
  'Still the same for me, unfortunately.',
  'Thanks, that answers my question.',
  'One more thing: does this also apply to the mobile app?',
]
// How many comments a discussion has: one in seven is a lone question still waiting (new).
const LENGTHS = [1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5]
export const DEFAULT_CATEGORIES: Array<[string, boolean]> = [
  ['Questions', true],
  ['Problems', false],
  ['Billing', false],
  ['Feature requests', true],
]

export interface Seeded {
  discussions: number
  comments: number
  customers: number
}

export function seedDiscussions(
  db: Db,
  clock: Clock,
  users: SyncUserStore,
  site: Site,
  count: number,
  options: { seed?: number; onProgress?: (done: number, total: number) => void } = {},
): Seeded {
  const counts = createDiscussionCounts(db)
  const now = clock()
  const p = (name: string) => sql.placeholder(name)

  const siteCategories = db.transaction(() => categoriesOf(db, clock, site))
  const people = db.transaction(() => peopleOf(db, users, site, peopleFor(count), now))
  const draw = discussionDraws(options.seed ?? 1, count, now, siteCategories, people)

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
    })
    .prepare()
  const insertComment = prepareCommentInsert(db)
  const lastNumber = db
    .select({ n: sql<number | null>`max(${discussions.number})` })
    .from(discussions)
    .where(eq(discussions.siteId, site.id))
    .prepare()

  let written = 0
  let commentsWritten = 0
  while (written < count) {
    const size = Math.min(BATCH, count - written)
    db.transaction(
      () => {
        const first = (lastNumber.get()?.n ?? 0) + 1
        const moved = new Map<string, { row: CountedRow; n: number }>()
        for (let i = 0; i < size; i++) {
          const { createdAt, category, customer, thread, last, state, before, isPublic, title } = draw(written + i)
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
          })
          thread.forEach((c, n) =>
            insertComment.run({
              discussionId: Number(lastInsertRowid),
              number: n + 1,
              authorId: c.authorId,
              bySupporter: c.bySupporter,
              body: c.body,
              internal: false,
              via: c.via,
              now: new Date(c.at),
            }),
          )
          commentsWritten += thread.length
          const row = { siteId: site.id, categoryId: category.id, state, public: isPublic }
          const key = JSON.stringify(row)
          moved.set(key, { row, n: (moved.get(key)?.n ?? 0) + 1 })
        }
        for (const { row, n } of moved.values()) counts.bump(row, n)
      },
      { behavior: 'immediate' },
    )
    written += size
    options.onProgress?.(written, count)
  }
  return { discussions: written, comments: commentsWritten, customers: people.customers.length }
}

const capitalise = (text: string) => text[0].toUpperCase() + text.slice(1)

interface Said {
  authorId: number
  bySupporter: boolean
  body: string
  via: CommentVia
  at: number
}

/** How many people a seed of `count` discussions writes as: one customer per five, 20 to 20,000. */
export const peopleFor = (count: number) => Math.min(20_000, Math.max(20, Math.ceil(count / 5)))

/**
 * The seed's discussions, drawn one after the other from one generator: discussion `index` of
 * `count`, its thread, state, visibility and title. Pure, and the one draw of both engines' seeds
 * (db/postgres/stores/seed.ts), so the same seed gives the same discussions on either. Call it in
 * index order: each draw moves the generator on.
 */
export function discussionDraws<C extends { public: boolean }>(
  seed: number,
  count: number,
  now: number,
  categories: readonly C[],
  people: { customers: number[]; supporters: number[] },
) {
  const random = seededRandom(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  return (index: number) => {
    const createdAt = now - SPAN_MS + Math.floor(((index + random()) / count) * SPAN_MS)
    const category = pick(categories)
    const customer = pick(people.customers)
    const thread = conversation(random, pick, createdAt, now, customer, people.supporters)
    const last = thread[thread.length - 1]
    // New until a supporter answers; resolved mostly when a supporter had the last word.
    const answered = thread.some((c) => c.bySupporter)
    let state: DiscussionState = !answered ? 'new' : last.bySupporter && random() < 0.75 ? 'resolved' : 'open'
    let before: DiscussionState | null = null
    if (random() < 0.03) [before, state] = [state, 'deleted']
    const isPublic = random() < 0.1 ? !category.public : category.public
    const title = random() < 0.35 ? `${pick(QUESTIONS)} ${pick(THINGS)}?` : capitalise(`${pick(THINGS)} ${pick(TROUBLES)}`)
    return { createdAt, category, customer, thread, last, state, before, isPublic, title }
  }
}

/** The comments of one discussion: a customer's question, then answers and follow-ups in turn. */
function conversation(
  random: () => number,
  pick: <T>(list: readonly T[]) => T,
  start: number,
  now: number,
  customer: number,
  supporters: number[],
): Said[] {
  const length = pick(LENGTHS)
  const via = pick(['email', 'web', 'web', 'api'] as const)
  const said: Said[] = []
  let at = start
  for (let n = 0; n < length; n++) {
    const bySupporter = n % 2 === 1
    const body =
      n === 0
        ? `${pick(OPENINGS)}\n\n${pick(SENTENCES)} ${pick(SENTENCES)}\n\nThanks!`
        : bySupporter
          ? pick(ANSWERS)
          : pick(FOLLOW_UPS)
    said.push({ authorId: bySupporter ? pick(supporters) : customer, bySupporter, body, via: bySupporter ? 'web' : via, at })
    at = Math.min(now, at + Math.floor(random() * 2 * DAY_MS))
  }
  return said
}

/** The site's categories, creating a few usual ones on a site that has none. */
function categoriesOf(db: Db, clock: Clock, site: Site): Category[] {
  const store = createCategoryStore(db, clock)
  const existing = store.list(site.id, 0, 1_000).categories
  if (existing.length > 0) return existing
  return DEFAULT_CATEGORIES.map(([name, isPublic]) => store.add(site.id, name, isPublic))
}

/** Customers to ask (made or reused by address) and the site's supporters to answer (one made if it has none). */
function peopleOf(db: Db, users: SyncUserStore, site: Site, howMany: number, now: number) {
  const member = (email: string, name: string, role: 'customer' | 'supporter') => {
    const user = users.find(email) ?? users.insert({ email, name }, null)
    db.insert(memberships).values({ siteId: site.id, userId: user.id, role, createdAt: new Date(now) }).onConflictDoNothing().run()
    return user.id
  }
  const customers: number[] = []
  for (let i = 0; i < howMany; i++) {
    const first = FIRST[i % FIRST.length]
    const last = LAST[Math.floor(i / FIRST.length) % LAST.length]
    const email = `${first}.${last}.${i + 1}@customers.${site.permalink}.example`.toLowerCase()
    customers.push(member(email, `${first} ${last}`, 'customer'))
  }
  let supporters = db
    .select({ id: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.siteId, site.id), eq(memberships.role, STAFF_ROLE)))
    .all()
    .map((row) => row.id)
  if (supporters.length === 0) supporters = [member(`support@${site.permalink}.example`, 'Seeded Supporter', STAFF_ROLE)]
  return { customers, supporters }
}
