import type { CommentVia, DiscussionState } from '../values.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { channelOf, dueAlerts, noClock, slaAfter, type SlaPolicy } from '../../lib/sla.ts'
import { createCategoryStore, type Category } from './categories.ts'
import { createSlaPolicyStore } from './sla-policies.ts'
import type { StorePort } from '../port.ts'
import type { Site } from './sites.ts'

// Realistic generated discussions for demos and benchmarks (`service-desk seed`): customers asking,
// supporters answering, states that follow the rules of docs/decisions.md. Deterministic for a given
// seed, the same on both engines (test/cli/seed.test.ts compares every row). The draws are here;
// the rows go in through each engine's bulk path (db/sqlite/seed.ts, db/postgres/seed.ts), in
// transactions of BATCH discussions that move the counts too, so a million discussions take
// minutes, not hours.

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

const capitalise = (text: string) => text[0].toUpperCase() + text.slice(1)

export interface Said {
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
 * (db/sqlite/seed.ts, db/postgres/seed.ts), so the same seed gives the same discussions on either. Call it in
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
    return { createdAt, category, customer, thread, last, state, before, isPublic, title, clock: seededClock(thread, state, now) }
  }
}

/** The seed's SLA policy (seedPolicy): a reply within four hours of the clock, first and next, warned of half an hour before. */
export const SEED_REPLY_MINUTES = 240
const SEED_WARN_MINUTES = 30
const SEED_POLICY = 'Seeded: a reply within 4 hours'
const seedTerms: SlaPolicy = {
  id: 0,
  conditions: { categories: [], tags: [], domains: [], channels: [] },
  targets: { firstReply: SEED_REPLY_MINUTES, nextReply: SEED_REPLY_MINUTES, resolution: null },
  warnBefore: SEED_WARN_MINUTES,
  schedule: null,
}

/**
 * What the clocks of a seeded discussion hold under the seed's policy at `now`, as the service would
 * have kept them through its history (lib/sla.ts): each comment moves them as a write does (a reply
 * owed since the customer's message that is not answered yet; a discussion deleted or resolved owes
 * none), a promise broken in the history is breached, and what fell due by `now` was told when it
 * fell due: its clocks are history, not news, so no write tells it late. What falls due after `now`
 * waits for the alerts' loop (plugins/sla-alerts.ts), as on a site that ran all along.
 */
export function seededClock(thread: readonly Said[], state: DiscussionState, now: number) {
  let clock = noClock
  for (const c of thread) clock = slaAfter(clock, { owedBefore: clock.replySince !== null, owedAfter: !c.bySupporter, at: new Date(c.at) }, seedTerms).clock
  const last = thread[thread.length - 1]!
  // Only a new or open discussion owes an answer: the others stopped their clocks with their last word.
  if (clock.replySince !== null && state !== 'new' && state !== 'open') clock = slaAfter(clock, { owedBefore: true, owedAfter: false, at: new Date(last.at) }, seedTerms).clock
  clock = dueAlerts(clock, new Date(now), seedTerms.warnBefore).clock
  const ms = (at: Date | null) => (at === null ? null : at.getTime())
  return {
    awaitingTeam: !last.bySupporter,
    replySince: ms(clock.replySince),
    firstRepliedAt: ms(clock.firstRepliedAt),
    firstReplyDueAt: ms(clock.firstReplyDueAt),
    nextReplyDueAt: ms(clock.nextReplyDueAt),
    dueAt: clock.dueAt.getTime(),
    breached: clock.breached.join(' '),
    told: clock.told.join(' '),
    alertAt: ms(clock.alertAt),
    channel: channelOf(thread[0]!.via),
  }
}

/** The seed's SLA policy on the site, made the first time (what its discussions' clocks run under). */
export async function seedPolicy(port: StorePort, clock: Clock, site: Site): Promise<number> {
  const store = createSlaPolicyStore(port, clock)
  const found = (await store.list(site.id)).find((p) => p.name === SEED_POLICY)
  if (found) return found.id
  const { conditions, targets, warnBefore } = seedTerms
  return (await store.add(site.id, { name: SEED_POLICY, conditions, scheduleId: null, targets, warnBefore })).id
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


/** The site's categories, in the order of its category list, or the usual ones, made now. */
export async function seedCategories(port: StorePort, clock: Clock, site: Site): Promise<Category[]> {
  const store = createCategoryStore(port, clock)
  const existing = (await store.list(site.id, 0, 1_000)).categories
  if (existing.length > 0) return existing
  const made: Category[] = []
  for (const [name, isPublic] of DEFAULT_CATEGORIES) made.push(await store.add(site.id, name, isPublic))
  return made
}

/** The customers a seed writes as: name and address of customer `index` of the site. */
export function seedCustomer(site: Site, index: number): { email: string; name: string } {
  const first = FIRST[index % FIRST.length]
  const last = LAST[Math.floor(index / FIRST.length) % LAST.length]
  return { email: `${first}.${last}.${index + 1}@customers.${site.permalink}.example`.toLowerCase(), name: `${first} ${last}` }
}

/** The supporter a seed makes on a site that has none. */
export const seedSupporter = (site: Site) => ({ email: `support@${site.permalink}.example`, name: 'Seeded Supporter' })

/** Where a count row sorts: a batch moves its counts in this order, as every write does (no deadlock between them). */
export const countKey = (row: { categoryId: number; state: string; public: boolean }) => `${row.categoryId}|${row.state}|${row.public ? 1 : 0}`
