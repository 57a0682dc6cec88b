import { and, desc, eq, isNull, lte, sql, type Column, type SQL } from '../drizzle.ts'
import { given, onFirstUse, type StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'

// oidc-provider's records (sessions, grants, codes, tokens, registered clients...) under the OAuth
// adapter, which computes every column from the library's payload and fingerprints the ids: this
// store only keeps rows and finds them, one store for both engines (db/port.ts).
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

/** The value the row being inserted had for `column` (ON CONFLICT ... DO UPDATE). */
function excluded(column: Column): SQL {
  return sql.raw(`excluded."${column.name}"`)
}

// Moments are bound as given (port.ts), without the column's mapping, which cannot take a null moment.
/** What an upsert binds, column by column. */
const UPSERT_VALUES = {
  model: sql.placeholder('model'),
  id: sql.placeholder('id'),
  payload: sql.placeholder('payload'),
  grantId: sql.placeholder('grantId'),
  uid: sql.placeholder('uid'),
  userCode: sql.placeholder('userCode'),
  accountId: sql.placeholder('accountId'),
  clientId: sql.placeholder('clientId'),
  resource: sql.placeholder('resource'),
  expiresAt: given('expiresAt'),
  createdAt: given('createdAt'),
}

const REPLACED = ['payload', 'grantId', 'uid', 'userCode', 'accountId', 'clientId', 'resource', 'expiresAt'] as const
type Replaced = (typeof REPLACED)[number]

/**
 * What an upsert of an existing row replaces: the whole record
 * (oidc-provider's upsert), but for when it was made and last used; a new record is not consumed.
 */
function replacedOnUpsert(records: Record<Replaced, Column>) {
  const replaced = Object.fromEntries(REPLACED.map((name) => [name, excluded(records[name])]))
  return { ...(replaced as Record<Replaced, SQL>), consumedAt: null }
}

export function createOAuthStore(port: StorePort, clock: Clock) {
  const { db, tables: { oauthRecords: records }, moment } = port
  const now = () => moment(new Date(clock()))
  // Live: no expiry, or one still ahead.
  const live = (at: unknown) => sql`(${records.expiresAt} IS NULL OR ${records.expiresAt} > ${at})`
  const key = and(eq(records.model, sql.placeholder('model')), eq(records.id, sql.placeholder('id')))

  // The statements asked on every request are prepared once.
  const insert = onFirstUse(() => db
    .insert(records)
    .values(UPSERT_VALUES)
    .onConflictDoUpdate({ target: [records.model, records.id], set: replacedOnUpsert(records) })
    .prepare('oauth_records_upsert'))

  const byKey = onFirstUse(() => db.select().from(records).where(and(key, live(given('now')))).prepare('oauth_records_by_key'))
  const byColumn = (column: Column, name: string) =>
    db
      .select()
      .from(records)
      .where(and(eq(records.model, sql.placeholder('model')), eq(column, sql.placeholder('value')), live(given('now'))))
      .orderBy(desc(records.createdAt))
      .limit(1)
      .prepare(name)
  const by = { uid: byColumn(records.uid, 'oauth_records_by_uid'), userCode: byColumn(records.userCode, 'oauth_records_by_user_code') }

  const consume = onFirstUse(() => db
    .update(records)
    .set({ consumedAt: given('now') })
    .where(and(key, isNull(records.consumedAt)))
    .prepare('oauth_records_consume'))
  const remove = onFirstUse(() => db.delete(records).where(key).prepare('oauth_records_destroy'))
  const touch = onFirstUse(() => db
    .update(records)
    .set({ lastUsedAt: given('at') })
    .where(and(key, sql`(${records.lastUsedAt} IS NULL OR ${records.lastUsedAt} < ${given('before')})`))
    .prepare('oauth_records_record_use'))

  return {
    /** Inserts the record, or replaces an existing one's (model, id) whole: created and last used stay, consumed is cleared. */
    async upsert(row: OAuthUpsert): Promise<void> {
      await insert.execute({ ...row, expiresAt: row.expiresAt && moment(row.expiresAt), createdAt: now() })
    },

    /** The live record, or undefined when there is none or it has expired. */
    async find(model: string, id: string): Promise<OAuthRow | undefined> {
      const [row] = await byKey.execute({ model, id, now: now() })
      return row
    },

    /** The newest live record of the model whose uid or user code is `value`. */
    async findBy(model: string, lookup: OAuthLookup, value: string): Promise<OAuthRow | undefined> {
      const [row] = await by[lookup].execute({ model, value, now: now() })
      return row
    },

    /** Marks the record consumed, now, unless it already was. */
    async consume(model: string, id: string): Promise<void> {
      await consume.execute({ model, id, now: now() })
    },

    async destroy(model: string, id: string): Promise<void> {
      await remove.execute({ model, id })
    },

    /** Deletes every record of the grant (the grant's own row included); returns how many. */
    async destroyGrant(grantId: string): Promise<number> {
      const removed = await db.delete(records).where(eq(records.grantId, grantId)).returning({ id: records.id })
      return removed.length
    },

    /** Records a use at `at`, written only when the last one recorded is more than a minute older. */
    async recordUse(model: string, id: string, at: Date): Promise<void> {
      await touch.execute({ model, id, at: moment(at), before: moment(new Date(at.getTime() - OAUTH_LAST_USED_EVERY_MS)) })
    },

    /** The live records of the model that match every filter given, newest created first, then by the bytes of their ids. */
    async list(model: string, filter: OAuthListFilter): Promise<OAuthRow[]> {
      const conditions = [eq(records.model, model), live(now())]
      if (filter.accountId !== undefined) conditions.push(eq(records.accountId, filter.accountId))
      if (filter.clientId !== undefined) conditions.push(eq(records.clientId, filter.clientId))
      if (filter.resource !== undefined) conditions.push(eq(records.resource, filter.resource))
      return db
        .select()
        .from(records)
        .where(and(...conditions))
        .orderBy(desc(records.createdAt), port.inByteOrder(records.id))
    },

    /** Deletes the expired records; returns how many. */
    async sweep(): Promise<number> {
      const removed = await db.delete(records).where(lte(records.expiresAt, new Date(clock()))).returning({ id: records.id })
      return removed.length
    },
  }
}

export type OAuthStore = ReturnType<typeof createOAuthStore>
