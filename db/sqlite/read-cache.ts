import type { Db } from './client.ts'

// The reads of the authentication path (a site by its permalink, a personal token by its
// fingerprint) are remembered, and forgotten the moment the database may have changed: when
// another connection committed (the CLI revoking a token, disabling a user, another service
// process), which moves SQLite's PRAGMA data_version, or when this connection wrote, which moves
// total_changes(). Checking both is one tiny statement, cheaper than the joined read it spares, so
// a revoked token, a disabled owner or a supporter taken off the staff is refused on the very
// next request, whichever process made the change.

// A value read inside a transaction may never be committed: nothing is remembered or answered
// from memory while one is open (and the transaction's own writes forget the rest when it ends).

export interface ReadCache {
  /** `load` memoised by its key, at most MAX_KEYS keys, all forgotten whenever the database changed. */
  memo<V>(load: (key: string) => Promise<V>): (key: string) => Promise<V>
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
  const dataVersion = db.$client.prepare('pragma data_version').pluck()
  const totalChanges = db.$client.prepare('select total_changes()').pluck()
  const maps: Array<Map<string, Promise<unknown>>> = []
  let seenVersion: unknown
  let seenChanges: unknown

  // data_version costs a read of the shared WAL index (about 3 us, total_changes() 0.2 us), so it
  // is read once per synchronous run of code: a request's site and token are looked up in one, and
  // no other request, nor anything another process commits, can be seen in the middle of it.
  let versionRead = false
  let version: unknown
  const forgetVersion = () => {
    versionRead = false
  }
  function currentVersion() {
    if (!versionRead) {
      version = dataVersion.get()
      versionRead = true
      queueMicrotask(forgetVersion)
    }
    return version
  }

  function forgetIfChanged() {
    // Every call: a write of this connection, even in the same run of code, is seen at once.
    const changes = totalChanges.get()
    const now = currentVersion()
    if (changes === seenChanges && now === seenVersion) return
    seenChanges = changes
    seenVersion = now
    for (const map of maps) map.clear()
  }

  return {
    memo<V>(load: (key: string) => Promise<V>) {
      // The promise is what is kept: better-sqlite3 reads synchronously, so the value it settles
      // to was read at the moment it was made. A rejected one is not kept.
      const entries = new Map<string, Promise<V>>()
      maps.push(entries)
      return (key: string) => {
        if (db.$client.inTransaction) return load(key)
        forgetIfChanged()
        if (entries.has(key)) return entries.get(key)!
        const value = load(key)
        entries.set(key, value)
        value.catch(() => entries.get(key) === value && entries.delete(key))
        // Map keeps insertion order: the oldest key goes first.
        if (entries.size > MAX_KEYS) entries.delete(entries.keys().next().value!)
        return value
      }
    },
  }
}
