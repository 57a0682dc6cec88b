import { and, desc, eq, isNull, lte, sql, type Column, type SQL } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { OAUTH_LAST_USED_EVERY_MS, raw, replacedOnUpsert, UPSERT_VALUES, type OAuthStore } from '../../stores/oauth.ts'
import { oauthRecords as records } from '../schema.ts'
import type { PgExecutor } from './executor.ts'

// oidc-provider's records on PostgreSQL: the behaviour of db/stores/oauth.ts. Each method is one
// statement deciding on the row as it is when it runs (the upsert is INSERT ... ON CONFLICT DO
// UPDATE, which waits for another process's insert of the same key and then replaces it), so any
// number of processes may call them at once. The statements asked on every request are prepared.
// `db` is the pool, or a transaction of it (the race test holds one open).


export function createOAuthStore(db: PgExecutor, clock: Clock): OAuthStore {
  const live = (now: SQL | Date) => sql`(${records.expiresAt} IS NULL OR ${records.expiresAt} > ${now})`
  const key = and(eq(records.model, sql.placeholder('model')), eq(records.id, sql.placeholder('id')))

  const insert = db
    .insert(records)
    .values(UPSERT_VALUES)
    .onConflictDoUpdate({ target: [records.model, records.id], set: replacedOnUpsert(records) })
    .prepare('oauth_records_upsert')

  const byKey = db.select().from(records).where(and(key, live(raw('now')))).prepare('oauth_records_by_key')
  const byColumn = (column: Column, name: string) =>
    db
      .select()
      .from(records)
      .where(and(eq(records.model, sql.placeholder('model')), eq(column, sql.placeholder('value')), live(raw('now'))))
      .orderBy(desc(records.createdAt))
      .limit(1)
      .prepare(name)
  const by = { uid: byColumn(records.uid, 'oauth_records_by_uid'), userCode: byColumn(records.userCode, 'oauth_records_by_user_code') }

  const consume = db
    .update(records)
    .set({ consumedAt: raw('now') })
    .where(and(key, isNull(records.consumedAt)))
    .prepare('oauth_records_consume')
  const remove = db.delete(records).where(key).prepare('oauth_records_destroy')
  const touch = db
    .update(records)
    .set({ lastUsedAt: raw('at') })
    .where(and(key, sql`(${records.lastUsedAt} IS NULL OR ${records.lastUsedAt} < ${raw('before')})`))
    .prepare('oauth_records_record_use')

  return {
    async upsert(row) {
      await insert.execute({ ...row, createdAt: new Date(clock()) })
    },

    async find(model, id) {
      const [row] = await byKey.execute({ model, id, now: new Date(clock()) })
      return row
    },

    async findBy(model, lookup, value) {
      const [row] = await by[lookup].execute({ model, value, now: new Date(clock()) })
      return row
    },

    async consume(model, id) {
      await consume.execute({ model, id, now: new Date(clock()) })
    },

    async destroy(model, id) {
      await remove.execute({ model, id })
    },

    async destroyGrant(grantId) {
      const result = await db.delete(records).where(eq(records.grantId, grantId))
      return Number(result.rowCount)
    },

    async recordUse(model, id, at) {
      await touch.execute({ model, id, at, before: new Date(at.getTime() - OAUTH_LAST_USED_EVERY_MS) })
    },

    async list(model, filter) {
      const conditions = [eq(records.model, model), live(new Date(clock()))]
      if (filter.accountId !== undefined) conditions.push(eq(records.accountId, filter.accountId))
      if (filter.clientId !== undefined) conditions.push(eq(records.clientId, filter.clientId))
      if (filter.resource !== undefined) conditions.push(eq(records.resource, filter.resource))
      // The ids in the order of their bytes, as SQLite orders them.
      return db
        .select()
        .from(records)
        .where(and(...conditions))
        .orderBy(desc(records.createdAt), sql`${records.id} COLLATE "C"`)
    },

    async sweep() {
      const result = await db.delete(records).where(lte(records.expiresAt, new Date(clock())))
      return Number(result.rowCount)
    },
  }
}
