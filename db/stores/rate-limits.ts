import { lt, sql } from '../drizzle.ts'
import { given, onFirstUse, type StorePort } from '../port.ts'

// The counts that fair use shares between processes (plugins/rate-limits.ts; docs/decisions.md,
// "Fair use"): one row per key and window, the number of requests taken from that key's budget in
// that window by every process on the database. A process takes several at once and spends them
// from memory, so the row is written once per lease, not once per request.

export function createRateLimitStore(port: StorePort) {
  const { db, moment, tables: { rateLimitWindows: windows } } = port
  // One atomic upsert adds to the count and answers the total after it: no transaction, no lock
  // held, whatever other processes take meanwhile. Each caller learns exactly what was taken
  // before its own share (the total less its share), so what it was granted is exact.
  const take = onFirstUse(() => db
    .insert(windows)
    .values({ key: sql.placeholder('key'), windowStart: given('windowStart'), taken: sql.placeholder('count') })
    .onConflictDoUpdate({ target: [windows.key, windows.windowStart], set: { taken: sql`${windows.taken} + excluded.taken` } })
    .returning({ taken: windows.taken })
    .prepare('rate_limit_windows_take'))
  const prune = onFirstUse(() => db.delete(windows).where(lt(windows.windowStart, given('before'))).prepare('rate_limit_windows_prune'))

  return {
    /** Adds `count` to what the key took in the window that starts at `windowStart`; answers the window's total, `count` included. */
    async take(key: string, windowStart: Date, count: number): Promise<number> {
      const [row] = await take.execute({ key, windowStart: moment(windowStart), count })
      return row.taken
    },

    /** Forgets the windows that started before `before`. */
    async prune(before: Date): Promise<void> {
      await prune.execute({ before: moment(before) })
    },
  }
}

export type RateLimitStore = ReturnType<typeof createRateLimitStore>
