import { and, asc, desc, eq, isNull, lte, sql, type Column, type SQL } from '../drizzle.ts'
import type { Db } from '../client.ts'
import { oauthRecords as records } from '../schema.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Async } from './async.ts'

// oidc-provider's records (sessions, grants, codes, tokens, registered clients...) under the OAuth
// adapter, which computes every column from the library's payload and fingerprints the ids: this
// store only keeps rows and finds them, the same on both engines (db/postgres/stores/oauth.ts).
// Every write is one statement that decides on the row as it is at that moment (an upsert, or an
// update or delete with its condition), never a read and then a write, so two processes on one
// PostgreSQL database cannot undo each other.

/** recordUse writes a row's last use at most once in this long. */
export const OAUTH_LAST_USED_EVERY_MS = 60_000

/** A record as stored: every column. */
export interface OAuthRow {
  model: string
  id: string
  /** The library's JSON, as it was given. */
  payload: string
  grantId: string | null
  uid: string | null
  userCode: string | null
  accountId: string | null
  clientId: string | null
  resource: string | null
  /** Null: lives until destroyed. */
  expiresAt: Date | null
  consumedAt: Date | null
  lastUsedAt: Date | null
  createdAt: Date
}

/** What the adapter writes: the whole record but its moments of creation, consumption and use. */
export type OAuthUpsert = Pick<OAuthRow, 'model' | 'id' | 'payload' | 'grantId' | 'uid' | 'userCode' | 'accountId' | 'clientId' | 'resource' | 'expiresAt'>

/** The columns other than the key that findBy looks a record up by. */
export type OAuthLookup = 'uid' | 'userCode'

/** list's filters: each one given must match. */
export interface OAuthListFilter {
  accountId?: string
  clientId?: string
  resource?: string
}

/** The value the row being inserted had for `column` (ON CONFLICT ... DO UPDATE, on either engine). */
export function excluded(column: Column): SQL {
  return sql.raw(`excluded."${column.name}"`)
}

/** A placeholder bound as it is given, without the column's mapping (which cannot take a null moment). */
export const raw = (name: string) => sql`${sql.placeholder(name)}`

/** What an upsert binds, column by column, on either engine. */
export const UPSERT_VALUES = {
  model: sql.placeholder('model'),
  id: sql.placeholder('id'),
  payload: sql.placeholder('payload'),
  grantId: sql.placeholder('grantId'),
  uid: sql.placeholder('uid'),
  userCode: sql.placeholder('userCode'),
  accountId: sql.placeholder('accountId'),
  clientId: sql.placeholder('clientId'),
  resource: sql.placeholder('resource'),
  expiresAt: raw('expiresAt'),
  createdAt: raw('createdAt'),
}

const REPLACED = ['payload', 'grantId', 'uid', 'userCode', 'accountId', 'clientId', 'resource', 'expiresAt'] as const
type Replaced = (typeof REPLACED)[number]

/**
 * What an upsert of an existing row replaces, on either engine's table: the whole record
 * (oidc-provider's upsert), but for when it was made and last used; a new record is not consumed.
 */
export function replacedOnUpsert(records: Record<Replaced, Column>) {
  const replaced = Object.fromEntries(REPLACED.map((name) => [name, excluded(records[name])]))
  return { ...(replaced as Record<Replaced, SQL>), consumedAt: null }
}

export function createOAuthStore(db: Db, clock: Clock) {
  // Live: no expiry, or one still ahead. Moments are milliseconds on SQLite.
  const live = (now: SQL | number) => sql`(${records.expiresAt} IS NULL OR ${records.expiresAt} > ${now})`
  const key = and(eq(records.model, sql.placeholder('model')), eq(records.id, sql.placeholder('id')))

  const insert = db
    .insert(records)
    .values(UPSERT_VALUES)
    .onConflictDoUpdate({ target: [records.model, records.id], set: replacedOnUpsert(records) })
    .prepare()

  const byKey = db.select().from(records).where(and(key, live(raw('now')))).prepare()
  const byColumn = (column: Column) =>
    db
      .select()
      .from(records)
      .where(and(eq(records.model, sql.placeholder('model')), eq(column, sql.placeholder('value')), live(raw('now'))))
      .orderBy(desc(records.createdAt))
      .limit(1)
      .prepare()
  const by = { uid: byColumn(records.uid), userCode: byColumn(records.userCode) }

  const consume = db
    .update(records)
    .set({ consumedAt: raw('now') })
    .where(and(key, isNull(records.consumedAt)))
    .prepare()
  const remove = db.delete(records).where(key).prepare()
  const touch = db
    .update(records)
    .set({ lastUsedAt: raw('at') })
    .where(and(key, sql`(${records.lastUsedAt} IS NULL OR ${records.lastUsedAt} < ${raw('before')})`))
    .prepare()

  return {
    /** Inserts the record, or replaces an existing one's (model, id) whole: created and last used stay, consumed is cleared. */
    upsert(row: OAuthUpsert): void {
      insert.run({ ...row, expiresAt: row.expiresAt?.getTime() ?? null, createdAt: clock() })
    },

    /** The live record, or undefined when there is none or it has expired. */
    find(model: string, id: string): OAuthRow | undefined {
      return byKey.get({ model, id, now: clock() })
    },

    /** The newest live record of the model whose uid or user code is `value`. */
    findBy(model: string, lookup: OAuthLookup, value: string): OAuthRow | undefined {
      return by[lookup].get({ model, value, now: clock() })
    },

    /** Marks the record consumed, now, unless it already was. */
    consume(model: string, id: string): void {
      consume.run({ model, id, now: clock() })
    },

    destroy(model: string, id: string): void {
      remove.run({ model, id })
    },

    /** Deletes every record of the grant (the grant's own row included); returns how many. */
    destroyGrant(grantId: string): number {
      return db.delete(records).where(eq(records.grantId, grantId)).run().changes
    },

    /** Records a use at `at`, written only when the last one recorded is more than a minute older. */
    recordUse(model: string, id: string, at: Date): void {
      touch.run({ model, id, at: at.getTime(), before: at.getTime() - OAUTH_LAST_USED_EVERY_MS })
    },

    /** The live records of the model that match every filter given, newest created first. */
    list(model: string, filter: OAuthListFilter): OAuthRow[] {
      const conditions = [eq(records.model, model), live(clock())]
      if (filter.accountId !== undefined) conditions.push(eq(records.accountId, filter.accountId))
      if (filter.clientId !== undefined) conditions.push(eq(records.clientId, filter.clientId))
      if (filter.resource !== undefined) conditions.push(eq(records.resource, filter.resource))
      return db
        .select()
        .from(records)
        .where(and(...conditions))
        .orderBy(desc(records.createdAt), asc(records.id))
        .all()
    },

    /** Deletes the expired records; returns how many. */
    sweep(): number {
      return db.delete(records).where(lte(records.expiresAt, new Date(clock()))).run().changes
    },
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncOAuthStore = ReturnType<typeof createOAuthStore>
export type OAuthStore = Async<SyncOAuthStore>
