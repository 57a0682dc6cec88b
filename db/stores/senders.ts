import { and, asc, count, eq, inArray, sql } from '../drizzle.ts'
import { onFirstUse, type StorePort, type Tables } from '../port.ts'
import type { SenderVerdict } from '../values.ts'
import type { Clock } from '../../lib/clock.ts'
import { StoreError } from './errors.ts'
import { lockSite } from './sites.ts'

// What a site says of senders (docs/decisions.md, "Spam"): an address, or a domain with its
// subdomains, whose mail is never taken for spam (allow) or always is (block). The mail pipeline
// asks before it files a message (plugins/mail/spam.ts); "Not spam" on a discussion allows its
// customer's address. One store for both engines.

export type SenderRule = Tables['senderRules']['$inferSelect']

/** The most rules a site keeps: every message asks them, by index, so the cap is for the pages and the API's listing. */
export const MAX_SENDER_RULES = 2_000

/** An address (local@domain) or a domain; a leading `@` or `*.` is taken off a domain. */
const ADDRESS = /^[^\s@<>()[\]\\,;:"]{1,64}@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/
const DOMAIN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/

/** The pattern as kept: lower case, an address or a domain of at least two labels (no top-level domain alone); a StoreError otherwise. */
export function senderPattern(given: string): string {
  const pattern = given.trim().toLowerCase().replace(/^(\*\.|@)/, '')
  if (pattern.length > 254 || !(ADDRESS.test(pattern) || DOMAIN.test(pattern))) {
    throw new StoreError('must be an email address (ann@example.com) or a domain (example.com), which covers its subdomains too', 'invalid', 'pattern')
  }
  return pattern
}

/**
 * The patterns that speak for an address, most particular first: the address, then its domain and
 * each parent domain of two labels or more (`a@x.example.com`: the address, x.example.com, example.com).
 */
export function patternsOf(address: string): string[] {
  const lower = address.trim().toLowerCase()
  const at = lower.lastIndexOf('@')
  if (at < 1) return []
  const labels = lower.slice(at + 1).split('.')
  const domains = labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'))
  return [lower, ...domains]
}

/** Sets the site's rule for `pattern` (as given, already checked) in the transaction of `port`: a rule it had for the pattern is replaced. */
async function putRule(port: StorePort, clock: Clock, siteId: number, pattern: string, verdict: SenderVerdict): Promise<SenderRule> {
  const { senderRules } = port.tables
  const at = new Date(clock())
  const [rule] = await port.db
    .insert(senderRules)
    .values({ siteId, pattern, verdict, createdAt: at })
    .onConflictDoUpdate({ target: [senderRules.siteId, senderRules.pattern], set: { verdict, createdAt: at } })
    .returning()
  return rule!
}

/** Allows `address` on the site in the transaction of `port` (a discussion marked not spam): an earlier rule for it is replaced. */
export async function allowSenderIn(port: StorePort, clock: Clock, siteId: number, address: string): Promise<void> {
  // The address as the discussion keeps it: what verdictFor looks up (patternsOf), not checked again.
  await putRule(port, clock, siteId, address.trim().toLowerCase(), 'allow')
}

export function createSenderStore(port: StorePort, clock: Clock) {
  const { db, tables: { senderRules } } = port
  const p = sql.placeholder
  const listStatement = onFirstUse(() => db.select().from(senderRules).where(eq(senderRules.siteId, p('siteId'))).orderBy(asc(senderRules.pattern)).prepare('sender_rules_list'))

  return {
    /** The site's rules, by pattern. */
    list: (siteId: number): Promise<SenderRule[]> => listStatement.execute({ siteId }),

    /**
     * What the site says of mail from `address`: the rule of its most particular pattern (the
     * address before its domain, a subdomain before its parent), or undefined when none speaks.
     */
    async verdictFor(siteId: number, address: string): Promise<SenderRule | undefined> {
      const patterns = patternsOf(address)
      if (patterns.length === 0) return undefined
      const rules = await db.select().from(senderRules).where(and(eq(senderRules.siteId, siteId), inArray(senderRules.pattern, patterns)))
      return patterns.map((pattern) => rules.find((rule) => rule.pattern === pattern)).find((rule) => rule !== undefined)
    },

    /** Sets what the site says of a pattern: a rule it had for the pattern is replaced. At most MAX_SENDER_RULES a site. */
    set(siteId: number, given: string, verdict: SenderVerdict): Promise<SenderRule> {
      const pattern = senderPattern(given)
      return port.atomic(async (tx) => {
        await lockSite(tx, siteId)
        const { senderRules: rules } = tx.tables
        const [{ n }] = await tx.db.select({ n: count() }).from(rules).where(and(eq(rules.siteId, siteId), sql`${rules.pattern} <> ${pattern}`))
        if (Number(n) >= MAX_SENDER_RULES) throw new StoreError(`this site has ${MAX_SENDER_RULES} sender rules, the most it keeps: remove one first`, 'conflict', 'pattern')
        return putRule(tx, clock, siteId, pattern, verdict)
      })
    },

    /** Removes one of the site's rules; a StoreError (not_found) when the site has no such rule. */
    async remove(siteId: number, id: number): Promise<void> {
      const gone = await db.delete(senderRules).where(and(eq(senderRules.siteId, siteId), eq(senderRules.id, port.wide(id)))).returning({ id: senderRules.id })
      if (gone.length === 0) throw new StoreError(`there is no sender rule ${id} on this site`, 'not_found', 'id')
    },
  }
}

export type SenderStore = ReturnType<typeof createSenderStore>
