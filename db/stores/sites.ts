import { randomBytes } from 'node:crypto'
import { asc, eq, sql } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { sites } from '../sqlite/schema.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { permalinkProblem } from '../../lib/permalink.ts'
import { StoreError } from './errors.ts'
import { readCache } from './read-cache.ts'
import type { Async } from './async.ts'

export type Site = typeof sites.$inferSelect

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

export function createSiteStore(db: Db, clock: Clock) {
  const byPermalink = db
    .select()
    .from(sites)
    .where(eq(sites.permalink, sql.placeholder('permalink')))
    .prepare()

  // Asked on every API request: remembered until the database changes (read-cache.ts). No site has
  // a permalink holding U+0000 (lib/nul.ts): not found, as on PostgreSQL, and never remembered.
  const remembered = readCache(db).memo((permalink: string) => byPermalink.get({ permalink }))
  const find = (permalink: string): Site | undefined => (holdsNul(permalink) ? undefined : remembered(permalink))

  return {
    find,

    /** The site, or a StoreError naming the permalink. */
    get(permalink: string): Site {
      const site = find(permalink)
      if (!site) throw noSuchSite(permalink)
      return site
    },

    add(permalink: string, name?: string): Site {
      const displayName = validateNewSite(permalink, name)
      if (find(permalink)) throw siteExists(permalink)
      return db
        .insert(sites)
        .values({ permalink, name: displayName, multipassKey: newMultipassKey(), createdAt: new Date(clock()) })
        .returning()
        .get()
    },

    /**
     * Replaces the site's multipass key (a new random one when none is given); tokens made with the
     * old key are refused from the next request on.
     */
    setMultipassKey(siteId: number, key: string = newMultipassKey()): string {
      checkMultipassKey(key)
      db.update(sites).set({ multipassKey: key }).where(eq(sites.id, siteId)).run()
      return key
    },

    list(): Site[] {
      return db.select().from(sites).orderBy(asc(sites.permalink)).all()
    },

    isEmpty(): boolean {
      return db.select({ id: sites.id }).from(sites).limit(1).get() === undefined
    },
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncSiteStore = ReturnType<typeof createSiteStore>
export type SiteStore = Async<SyncSiteStore>
