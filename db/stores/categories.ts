import { and, asc, count, eq, sql } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { categories } from '../sqlite/schema.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { StoreError } from './errors.ts'
import type { Async } from './async.ts'

export type Category = typeof categories.$inferSelect

export const MAX_CATEGORY_NAME = 100
const MAX_PERMALINK = 60

/**
 * The URL-safe form of a name or title: lowercase ASCII letters and digits joined by single
 * dashes, accents dropped, at most 60 characters. `fallback` when nothing is left.
 */
export function slugify(text: string, fallback: string): string {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, MAX_PERMALINK)
    .replace(/^-+|-+$/g, '')
  return slug === '' ? fallback : slug
}

/** The display name of a new category (trimmed), or a StoreError for one that will not do. */
export function validateCategoryName(name: string): string {
  const displayName = name.trim()
  if (displayName === '' || displayName.length > MAX_CATEGORY_NAME) {
    throw new StoreError(`a category name must be 1 to ${MAX_CATEGORY_NAME} characters`, 'invalid', 'name')
  }
  if (holdsNul(displayName)) throw new StoreError('a category name must not contain the character U+0000', 'invalid', 'name')
  return displayName
}

export function createCategoryStore(db: Db, clock: Clock) {
  const byId = db
    .select()
    .from(categories)
    .where(and(eq(categories.id, sql.placeholder('id')), eq(categories.siteId, sql.placeholder('siteId'))))
    .prepare()

  const byPermalink = db
    .select({ id: categories.id })
    .from(categories)
    .where(and(eq(categories.siteId, sql.placeholder('siteId')), eq(categories.permalink, sql.placeholder('permalink'))))
    .prepare()

  // A site has a handful of categories, so counting them is cheap; listed by name like a menu.
  const page = db
    .select()
    .from(categories)
    .where(eq(categories.siteId, sql.placeholder('siteId')))
    .orderBy(sql`${categories.name} COLLATE NOCASE`, asc(categories.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare()

  const total = db
    .select({ n: count() })
    .from(categories)
    .where(eq(categories.siteId, sql.placeholder('siteId')))
    .prepare()

  return {
    /** The category of this site with this id; undefined for another site's or an unknown id. */
    find(siteId: number, id: number): Category | undefined {
      return byId.get({ siteId, id })
    },

    /** Creates a category; its permalink is made from the name, with -2, -3... when taken. */
    add(siteId: number, name: string, isPublic: boolean): Category {
      const displayName = validateCategoryName(name)
      const base = slugify(displayName, 'category')
      return db.transaction(
        (tx) => {
          let permalink = base
          for (let n = 2; byPermalink.get({ siteId, permalink }); n++) permalink = `${base}-${n}`
          return tx
            .insert(categories)
            .values({ siteId, name: displayName, permalink, public: isPublic, createdAt: new Date(clock()) })
            .returning()
            .get()
        },
        { behavior: 'immediate' },
      )
    },

    list(siteId: number, offset: number, limit: number): { total: number; categories: Category[] } {
      return { total: total.get({ siteId })!.n, categories: page.all({ siteId, offset, limit }) }
    },
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncCategoryStore = ReturnType<typeof createCategoryStore>
export type CategoryStore = Async<SyncCategoryStore>
