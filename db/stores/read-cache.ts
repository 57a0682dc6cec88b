import type { Db } from '../client.ts'

// The reads of the authentication path (a site by its permalink, a personal token by its
// fingerprint) are remembered, and forgotten the moment the database may have changed: when
// another connection committed (the CLI revoking a token, disabling a user, another service
// process), which moves SQLite's PRAGMA data_version, or when this connection wrote, which moves
// total_changes(). Checking both is one tiny statement, cheaper than the joined read it spares, so
// a revoked token, a disabled owner or a supporter taken off the staff is refused on the very
// next request, whichever process made the change.

export interface ReadCache {
  /** `load` memoised by its key, at most `max` keys, all forgotten whenever the database changed. */
  memo<V>(load: (key: string) => V): (key: string) => V
}

const MAX_KEYS = 10_000
const caches = new WeakMap<Db, ReadCache>()

/** The one read cache of a database connection, shared by its stores. */
export function readCache(db: Db): ReadCache {
  let cache = caches.get(db)
  if (!cache) caches.set(db, (cache = createReadCache(db)))
  return cache
}

function createReadCache(db: Db): ReadCache {
  const stamp = db.$client.prepare("select (select data_version from pragma_data_version()) || ':' || total_changes()").pluck()
  const maps: Array<Map<string, unknown>> = []
  let seen: unknown

  function forgetIfChanged() {
    const now = stamp.get()
    if (now === seen) return
    seen = now
    for (const map of maps) map.clear()
  }

  return {
    memo<V>(load: (key: string) => V) {
      const entries = new Map<string, V>()
      maps.push(entries)
      return (key: string) => {
        forgetIfChanged()
        if (entries.has(key)) return entries.get(key) as V
        const value = load(key)
        entries.set(key, value)
        // Map keeps insertion order: the oldest key goes first.
        if (entries.size > MAX_KEYS) entries.delete(entries.keys().next().value!)
        return value
      }
    },
  }
}
