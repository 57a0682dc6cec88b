import { asc, eq, sql } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { holdsNul } from '../../../lib/nul.ts'
import { checkMultipassKey, newMultipassKey, noSuchSite, siteExists, validateNewSite, type Site, type SiteStore } from '../../stores/sites.ts'
import type { PgDb } from '../client.ts'
import { sites } from '../schema.ts'
import type { PgExecutor } from './executor.ts'

// Sites on PostgreSQL: the behaviour of db/stores/sites.ts. No read cache: every look-up reads.

/** Adds a site (on `q`, the pool or a caller's transaction); the conflict StoreError when its permalink is taken. */
export async function addSite(q: PgExecutor, clock: Clock, permalink: string, name?: string): Promise<Site> {
  const displayName = validateNewSite(permalink, name)
  // Asked first, as on SQLite, so a refused add takes no id from the sequence.
  const [taken] = await q.select({ id: sites.id }).from(sites).where(eq(sites.permalink, permalink))
  if (taken) throw siteExists(permalink)
  // The unique constraint has the last word: of two processes adding one permalink, one inserts,
  // the other inserts nothing (its transaction stays usable) and is refused the same way.
  const [site] = await q
    .insert(sites)
    .values({ permalink, name: displayName, multipassKey: newMultipassKey(), createdAt: new Date(clock()) })
    .onConflictDoNothing({ target: sites.permalink })
    .returning()
  if (!site) throw siteExists(permalink)
  return site
}

/** Whether there is no site at all. */
export async function noSites(q: PgExecutor): Promise<boolean> {
  const rows = await q.select({ id: sites.id }).from(sites).limit(1)
  return rows.length === 0
}

export function createSiteStore(db: PgDb, clock: Clock): SiteStore {
  // Asked on every API request.
  const byPermalink = db
    .select()
    .from(sites)
    .where(eq(sites.permalink, sql.placeholder('permalink')))
    .prepare('sites_by_permalink')

  async function find(permalink: string): Promise<Site | undefined> {
    // PostgreSQL text cannot hold U+0000, so no permalink has it (lib/nul.ts): not found, without a
    // query that the server would refuse.
    if (holdsNul(permalink)) return undefined
    const [site] = await byPermalink.execute({ permalink })
    return site
  }

  return {
    find,

    async get(permalink) {
      const site = await find(permalink)
      if (!site) throw noSuchSite(permalink)
      return site
    },

    add: (permalink, name) => addSite(db, clock, permalink, name),

    async setMultipassKey(siteId, key = newMultipassKey()) {
      checkMultipassKey(key)
      await db.update(sites).set({ multipassKey: key }).where(eq(sites.id, siteId))
      return key
    },

    async list() {
      // In code point order, as SQLite sorts text, whatever the database's collation.
      return db.select().from(sites).orderBy(asc(sql`${sites.permalink} COLLATE "C"`))
    },

    isEmpty: () => noSites(db),
  }
}
