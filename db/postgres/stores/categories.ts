import { and, asc, count, eq, sql, type SQL, type SQLWrapper } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { slugify, validateCategoryName, type Category, type CategoryStore } from '../../stores/categories.ts'
import type { PgDb } from '../client.ts'
import { categories, sites } from '../schema.ts'
import type { PgExecutor } from './executor.ts'

// The categories of a site on PostgreSQL (db/stores/categories.ts, the same behaviour).

/**
 * An id or number a request names, compared as bigint: the ids are PostgreSQL integers, and a
 * larger value (the API takes up to 2^53 - 1) is then simply not found, as on SQLite, instead of an
 * out-of-range error. An integer column compared to a bigint still uses its index.
 */
export function big(value: number | SQLWrapper): SQL {
  return sql`${value}::bigint`
}

/** Takes the site's row lock (FOR NO KEY UPDATE, which leaves the foreign-key checks of other writes alone) until the transaction ends. */
export async function lockSite(q: PgExecutor, siteId: number): Promise<void> {
  await q.select({ id: sites.id }).from(sites).where(eq(sites.id, siteId)).for('no key update')
}

/**
 * Creates a category, its permalink made from the name with -2, -3... when taken. Call inside a
 * transaction: the site's lock makes two adds of one name take turns instead of colliding.
 */
export async function addCategory(q: PgExecutor, clock: Clock, siteId: number, name: string, isPublic: boolean): Promise<Category> {
  const displayName = validateCategoryName(name)
  const base = slugify(displayName, 'category')
  await lockSite(q, siteId)
  const taken = async (permalink: string) =>
    (await q
      .select({ id: categories.id })
      .from(categories)
      .where(and(eq(categories.siteId, siteId), eq(categories.permalink, permalink)))
      .limit(1)).length > 0
  let permalink = base
  for (let n = 2; await taken(permalink); n++) permalink = `${base}-${n}`
  const [category] = await q
    .insert(categories)
    .values({ siteId, name: displayName, permalink, public: isPublic, createdAt: new Date(clock()) })
    .returning()
  return category
}

export function createCategoryStore(db: PgDb, clock: Clock): CategoryStore {
  const p = sql.placeholder
  const byId = db
    .select()
    .from(categories)
    .where(and(eq(categories.id, big(p('id'))), eq(categories.siteId, p('siteId'))))
    .prepare('sd_category_by_id')

  // Listed by name like a menu, case-insensitively as SQLite's COLLATE NOCASE does: ASCII letters
  // folded (lower() under the "C" collation folds only those), then compared byte by byte.
  const page = db
    .select()
    .from(categories)
    .where(eq(categories.siteId, p('siteId')))
    .orderBy(sql`lower(${categories.name} COLLATE "C")`, asc(categories.id))
    .limit(p('limit'))
    .offset(p('offset'))
    .prepare('sd_category_page')

  const total = db
    .select({ n: count() })
    .from(categories)
    .where(eq(categories.siteId, p('siteId')))
    .prepare('sd_category_total')

  return {
    async find(siteId: number, id: number): Promise<Category | undefined> {
      return (await byId.execute({ siteId, id }))[0]
    },

    add(siteId: number, name: string, isPublic: boolean): Promise<Category> {
      return db.transaction((tx) => addCategory(tx, clock, siteId, name, isPublic))
    },

    async list(siteId: number, offset: number, limit: number): Promise<{ total: number; categories: Category[] }> {
      // SQLite reads a negative limit as none and a negative offset as 0; PostgreSQL refuses both.
      const [counted] = await total.execute({ siteId })
      const rows = await page.execute({ siteId, offset: Math.max(0, offset), limit: limit < 0 ? null : limit })
      return { total: counted.n, categories: rows }
    },
  }
}
