import { randomBytes } from 'node:crypto'
import { and, asc, eq, inArray, isNull, sql } from '../drizzle.ts'
import { onFirstUse, unguarded, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { permalinkProblem } from '../../lib/permalink.ts'
import { StoreError } from './errors.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { changedPolicy, POLICY_NAMES, policyOf, type SitePolicy } from './site-policy.ts'
import { STAFF_ROLE } from './staff.ts'

export type Site = Tables['sites']['$inferSelect']

/** A random multipass key: 32 hex characters, the form existing multipass integrations expect. */
export function newMultipassKey(): string {
  return randomBytes(16).toString('hex')
}

const MULTIPASS_KEY = /^[\x21-\x7e]{8,256}$/

/** The display name of a new site, or a StoreError for a permalink or name that will not do. */
export function validateNewSite(permalink: string, name?: string): string {
  const problem = permalinkProblem(permalink)
  if (problem) throw new StoreError(problem, 'invalid', 'site')
  const displayName = (name ?? permalink).trim()
  if (displayName === '' || displayName.length > 100) {
    throw new StoreError('a site name must be 1 to 100 characters', 'invalid', 'name')
  }
  if (holdsNul(displayName)) throw new StoreError('a site name must not contain the character U+0000', 'invalid', 'name')
  return displayName
}

export function siteExists(permalink: string): StoreError {
  return new StoreError(`site "${permalink}" already exists`, 'conflict', 'site')
}

export function noSuchSite(permalink: string): StoreError {
  return new StoreError(`there is no site "${permalink}"`, 'not_found', 'site')
}

/** A StoreError for a multipass key that will not do. */
export function checkMultipassKey(key: string): void {
  // Any key another host gave a team is kept as it is, so their single sign-on code keeps working.
  if (!MULTIPASS_KEY.test(key)) {
    throw new StoreError('a multipass key must be 8 to 256 visible characters, without spaces', 'invalid', 'multipass_key')
  }
}

/** Takes the site's row lock in the transaction of `port` (port.locked), until it ends: the writes that decide on the site take turns. */
export async function lockSite(port: StorePort, siteId: number): Promise<void> {
  const { sites } = port.tables
  const lock = port.prepared('sites_lock', (db) => port.locked(db.select({ id: sites.id }).from(sites).where(eq(sites.id, sql.placeholder('siteId')))).prepare('sites_lock'))
  await lock.execute({ siteId })
}

/**
 * Moves the site's version on, in the transaction of `port`: every change to what the API shows of
 * the site does, in the transaction of the change (docs/decisions.md, "Conditional requests").
 */
export async function bumpSiteVersion(port: StorePort, siteId: number): Promise<void> {
  const { sites } = port.tables
  const bump = port.prepared('sites_bump_version', (db) =>
    db
      .update(sites)
      .set({ version: sql`${sites.version} + 1` })
      .where(eq(sites.id, sql.placeholder('siteId')))
      .prepare('sites_bump_version'),
  )
  await bump.execute({ siteId })
}

/**
 * Moves the site's rules' version on, in the transaction of a change to what a write of its
 * discussions consults besides the discussion: its rules (db/stores/rules.ts), its SLA policies and
 * their schedules (db/stores/sla-policies.ts, db/stores/schedules.ts). Each process keeps what it
 * read of them for as long as this is the number it reads (db/stores/rules.ts, db/stores/sla.ts).
 */
export async function bumpRulesVersion(port: StorePort, siteId: number): Promise<void> {
  const { sites } = port.tables
  await port.db.update(sites).set({ rulesVersion: sql`${sites.rulesVersion} + 1` }).where(eq(sites.id, siteId))
}

/**
 * A site's row by its id, kept for as long as its version is the one asked for: every change to a
 * site's row moves its version (a trigger of the migration hot_path sees to it, whoever writes), so
 * a caller that read the version in the same statement as what it decides on (the authentication
 * path's one read, db/stores/tokens.ts) gets the row as it is, with one read of it after each change.
 * Undefined when the site is gone.
 */
export function keptSites(port: StorePort): (siteId: number, version: number) => Promise<Site | undefined> {
  const { sites } = port.tables
  const kept = keptSiteRows(port)
  const byId = onFirstUse(() => port.db.select().from(sites).where(eq(sites.id, sql.placeholder('siteId'))).prepare('sites_by_id'))
  return async (siteId, version) => {
    const known = kept.get(siteId)
    if (known?.version === version) return known
    // A later version than the one asked for is kept too (the next request reads it again); a site
    // deleted since the caller's read, as undefined, which no version matches.
    const [site] = await byId.execute({ siteId })
    kept.set(siteId, site)
    return site
  }
}

/** The sites' rows this engine's processes keep (keptSites), by id. */
const keptSiteRows = (port: StorePort) => port.kept('kept_sites', () => new Map<number, Site | undefined>())

/**
 * After this process's write moved the site's version by one and its feed's number with it, and
 * nothing else of its row (db/stores/changes.ts, siteChanged and takeSite), and committed: the kept
 * row, when it is the one just before, is the row now, as read (`version`, `changesSeq`: what the
 * write's RETURNING said). Otherwise another write came between, and the next request reads the row.
 */
export function siteMovedBy(port: StorePort, siteId: number, moved: { version: number; changesSeq: number }): void {
  const kept = keptSiteRows(port)
  const known = kept.get(siteId)
  if (known?.version === moved.version - 1) kept.set(siteId, { ...known, ...moved })
}

/**
 * Adds a site already validated (validateNewSite); undefined, and nothing written, when its
 * permalink is taken, by this process or another: the unique constraint has the last word.
 */
export async function insertSiteUnlessTaken(port: StorePort, clock: Clock, permalink: string, name: string): Promise<Site | undefined> {
  const { sites } = port.tables
  const [site] = await port.db
    .insert(sites)
    .values({ permalink, name, multipassKey: newMultipassKey(), createdAt: new Date(clock()) })
    .onConflictDoNothing({ target: sites.permalink })
    .returning()
  return site
}

/**
 * Sites, one store for both engines (db/port.ts). The look-up by permalink, asked on every API
 * request, is remembered where the engine can tell a change cheaply (port.remember).
 */
/**
 * Refuses (a StoreError) to let a site's staff sign in with the company's account only while that
 * would lock them out: the site has no identity provider, or the administrator switching it on has
 * never signed in with one (so has not seen it work). The operator's command line may: it is the
 * way back in (docs/decisions.md, "Staff sign-in with the company's account").
 */
async function companyAccountsWork(tx: StorePort, siteId: number, by: Actor | undefined): Promise<void> {
  const { signInProviders, signInLinks } = tx.tables
  const providers = await tx.db.select({ id: signInProviders.id }).from(signInProviders).where(eq(signInProviders.siteId, siteId))
  if (providers.length === 0) throw new StoreError("add the company's identity provider first (Administration -> Sign-in): nobody could sign in", 'conflict', 'company_sign_in_only')
  if (by?.id === null || by?.id === undefined) return
  const [linked] = await tx.db
    .select({ subject: signInLinks.subject })
    .from(signInLinks)
    .innerJoin(signInProviders, eq(signInProviders.id, signInLinks.providerId))
    .where(and(eq(signInProviders.siteId, siteId), eq(signInLinks.userId, by.id)))
    .limit(1)
  if (!linked) throw new StoreError("sign in with the company's account yourself first, so you know it works: with passwords off you could not sign in otherwise", 'conflict', 'company_sign_in_only')
}

/** Ends the sessions of the site's staff that no identity provider made. */
async function endOwnSessionsOfStaff(tx: StorePort, siteId: number): Promise<void> {
  const { webSessions, memberships } = tx.tables
  const staff = tx.db.select({ id: memberships.userId }).from(memberships).where(and(eq(memberships.siteId, siteId), eq(memberships.role, STAFF_ROLE)))
  await tx.db.delete(webSessions).where(and(eq(webSessions.siteId, siteId), isNull(webSessions.providerId), inArray(webSessions.userId, staff)))
}

export function createSiteStore(port: StorePort, clock: Clock) {
  const { db, tables: { sites } } = port
  const byPermalink = onFirstUse(() => db
    .select()
    .from(sites)
    .where(eq(sites.permalink, sql.placeholder('permalink')))
    .prepare('sites_by_permalink'))

  const remembered = port.remember(async (permalink) => (await byPermalink.execute({ permalink }))[0])

  // No site has a permalink holding U+0000 (PostgreSQL text cannot hold it, lib/nul.ts): not found,
  // without a query the server would refuse, and never remembered.
  const find = async (permalink: string): Promise<Site | undefined> => (holdsNul(permalink) ? undefined : remembered(permalink))

  return {
    find: unguarded(find),

    /** The site, or a StoreError naming the permalink. */
    async get(permalink: string): Promise<Site> {
      const site = await find(permalink)
      if (!site) throw noSuchSite(permalink)
      return site
    },

    async add(permalink: string, name?: string): Promise<Site> {
      const displayName = validateNewSite(permalink, name)
      // Asked first, so a refused add takes no id from PostgreSQL's sequence.
      if (await find(permalink)) throw siteExists(permalink)
      const site = await insertSiteUnlessTaken(port, clock, permalink, displayName)
      if (!site) throw siteExists(permalink)
      return site
    },

    /**
     * Replaces the site's multipass key (a new random one when none is given); tokens made with the
     * old key are refused from the next request on.
     */
    async setMultipassKey(siteId: number, key: string = newMultipassKey()): Promise<string> {
      checkMultipassKey(key)
      await db.update(sites).set({ multipassKey: key }).where(eq(sites.id, siteId))
      return key
    },

    /**
     * Changes the site's token policy (docs/decisions.md, "Site administrators"), each change
     * checked; the policy before and after. Under the site's row lock, so two administrators'
     * changes take turns and each one's `before` is what it replaced. Every process sees the new
     * policy from its next request on (the site is read with every request).
     */
    async setPolicy(siteId: number, changes: Partial<SitePolicy>, by?: Actor): Promise<{ before: SitePolicy; after: SitePolicy }> {
      return port.atomic(async (tx) => {
        await lockSite(tx, siteId)
        const [site] = await tx.db.select().from(sites).where(eq(sites.id, siteId))
        if (!site) throw new StoreError('there is no such site', 'not_found', 'site')
        const before = policyOf(site)
        const after = changedPolicy(before, changes)
        const companyOnlyNow = after.companySignInOnly && !before.companySignInOnly
        if (companyOnlyNow) await companyAccountsWork(tx, siteId, by)
        await tx.db.update(sites).set(after).where(eq(sites.id, siteId))
        // The staff's sessions of a password or a passkey end with it: from now on they sign in at the provider.
        if (companyOnlyNow) await endOwnSessionsOfStaff(tx, siteId)
        // By the names the API, the CLI and the security log give the fields.
        const named = (policy: SitePolicy) => Object.fromEntries(Object.entries(policy).map(([k, v]) => [POLICY_NAMES[k as keyof SitePolicy], v]))
        const changed = changedFields(named(before), named(after))
        if (Object.keys(changed.after).length > 0) await recordChange(tx, clock, by, siteId, 'policy.changed', 'the token policy', changed)
        return { before, after }
      })
    },

    /** Every site, by permalink in code point order whatever the database's collation. */
    async list(): Promise<Site[]> {
      return db.select().from(sites).orderBy(asc(port.inByteOrder(sites.permalink)))
    },

    async isEmpty(): Promise<boolean> {
      return (await db.select({ id: sites.id }).from(sites).limit(1)).length === 0
    },
  }
}

export type SiteStore = ReturnType<typeof createSiteStore>
