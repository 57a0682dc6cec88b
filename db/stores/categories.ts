import { and, asc, count, eq, sql } from '../drizzle.ts'
import { onFirstUse, pageBounds, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { bumpSiteVersion, lockSite } from './sites.ts'

export type Category = Tables['categories']['$inferSelect']

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

/**
 * Creates a category in the transaction of `port`, its permalink made from the name with -2, -3...
 * when taken: the site's row is locked first, so two adds of one name take turns instead of colliding.
 */
export async function addCategory(port: StorePort, clock: Clock, siteId: number, name: string, isPublic: boolean): Promise<Category> {
  const { db, tables: { categories } } = port
  const displayName = validateCategoryName(name)
  const base = slugify(displayName, 'category')
  await lockSite(port, siteId)
  const taken = async (permalink: string) =>
    (await db
      .select({ id: categories.id })
      .from(categories)
      .where(and(eq(categories.siteId, siteId), eq(categories.permalink, permalink)))
      .limit(1)).length > 0
  let permalink = base
  for (let n = 2; await taken(permalink); n++) permalink = `${base}-${n}`
  const [category] = await db
    .insert(categories)
    .values({ siteId, name: displayName, permalink, public: isPublic, createdAt: new Date(clock()) })
    .returning()
  await bumpSiteVersion(port, siteId)
  return category
}

/** The categories of the sites, one store for both engines (db/port.ts). */
export function createCategoryStore(port: StorePort, clock: Clock) {
  const { db, tables: { categories } } = port
  const p = sql.placeholder
  const byId = onFirstUse(() => db
    .select()
    .from(categories)
    .where(and(eq(categories.id, port.wide(p('id'))), eq(categories.siteId, p('siteId'))))
    .prepare('categories_by_id'))

  // A site has a handful of categories, so counting them is cheap; listed by name like a menu,
  // case-insensitively.
  const page = onFirstUse(() => db
    .select()
    .from(categories)
    .where(eq(categories.siteId, p('siteId')))
    .orderBy(port.folded(categories.name), asc(categories.id))
    .limit(p('limit'))
    .offset(p('offset'))
    .prepare('categories_page'))

  // The site's first category by creation: where mail goes when a mailbox names none.
  const firstMade = onFirstUse(() => db.select().from(categories).where(eq(categories.siteId, p('siteId'))).orderBy(asc(categories.id)).limit(1).prepare('categories_first_made'))

  const total = onFirstUse(() => db
    .select({ n: count() })
    .from(categories)
    .where(eq(categories.siteId, p('siteId')))
    .prepare('categories_total'))

  return {
    /** The category of this site with this id; undefined for another site's or an unknown id. */
    async find(siteId: number, id: number): Promise<Category | undefined> {
      return (await byId.execute({ siteId, id }))[0]
    },

    /** Creates a category; its permalink is made from the name, with -2, -3... when taken. */
    add(siteId: number, name: string, isPublic: boolean, by?: Actor): Promise<Category> {
      return port.atomic(async (tx) => {
        const category = await addCategory(tx, clock, siteId, name, isPublic)
        await recordChange(tx, clock, by, siteId, 'category.created', category.name, { public: category.public })
        return category
      })
    },

    /**
     * Changes a category of the site: its name (its permalink stays, so links to it keep working),
     * whether new discussions in it are public, and whether the discussions customers start in it
     * are given to the site's supporters in turn (db/stores/assignment.ts). The category, or
     * undefined when the site has none with this id; a StoreError for a name that will not do.
     */
    async change(siteId: number, id: number, changes: { name?: string; public?: boolean; roundRobin?: boolean }, by?: Actor): Promise<Category | undefined> {
      const set = {
        ...(changes.name === undefined ? {} : { name: validateCategoryName(changes.name) }),
        ...(changes.public === undefined ? {} : { public: changes.public }),
        ...(changes.roundRobin === undefined ? {} : { roundRobin: changes.roundRobin }),
      }
      return port.atomic(async (tx) => {
        // The site first, as a create takes it before it moves the category's turn: one lock order.
        await lockSite(tx, siteId)
        const where = and(eq(categories.siteId, siteId), eq(categories.id, port.wide(id)))
        const [before] = await tx.db.select().from(categories).where(where)
        if (!before || Object.keys(set).length === 0) return before
        const [changed] = await tx.db.update(categories).set(set).where(where).returning()
        await bumpSiteVersion(tx, siteId)
        const { name, public: isPublic, roundRobin } = changed!
        const difference = changedFields({ name: before.name, public: before.public, round_robin: before.roundRobin }, { name, public: isPublic, round_robin: roundRobin })
        if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'category.changed', before.name, difference)
        return changed
      })
    },

    /** The site's first category by creation (General, on a site `site add` made); undefined when it has none. */
    async first(siteId: number): Promise<Category | undefined> {
      return (await firstMade.execute({ siteId }))[0]
    },

    /** A page of the site's categories (all of them for a negative limit) and how many there are. */
    async list(siteId: number, offset: number, limit: number): Promise<{ total: number; categories: Category[] }> {
      const [counted] = await total.execute({ siteId })
      const rows = await page.execute({ siteId, ...pageBounds(offset, limit) })
      return { total: counted.n, categories: rows }
    },
  }
}

export type CategoryStore = ReturnType<typeof createCategoryStore>
