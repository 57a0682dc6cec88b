import { closeSync, openSync, readSync } from 'node:fs'
import type { Db } from './client.ts'

// The reads of the authentication path (a site by its permalink, a personal token by its
// fingerprint) are remembered, and forgotten the moment the database may have changed: when
// another connection committed (the CLI revoking a token, disabling a user, another service
// process), which rewrites the header of the file's WAL index (below), or when this connection
// wrote, which moves total_changes(). Checking both costs less than a microsecond, far less than
// the joined read it spares, so a revoked token, a disabled owner or a supporter taken off the
// staff is refused on the very next request, whichever process made the change.

// A value read inside a transaction may never be committed: nothing is remembered or answered
// from memory while one is open (and the transaction's own writes forget the rest when it ends).

export interface ReadCache {
  /** `load` memoised by its key, at most MAX_KEYS keys, all forgotten whenever the database changed. */
  memo<V>(load: (key: string) => Promise<V>): (key: string) => Promise<V>
  /**
   * A request arrived (the server tells every one, and waits for `admit` before it goes on): the
   * requests that arrived in one turn of the event loop are admitted together once the turn has
   * read every socket, and the database's version is read again before anything is answered to
   * them from memory, so whatever committed before any of them arrived is seen by it: one read of
   * the version for all of them. Once told, the cache keeps a version read until the event loop
   * turns, instead of for one run of code only.
   */
  arrived(admit: () => void): void
  /** The connection is closing: let go of what the cache holds open. */
  close(): void
  /** A value that moves whenever the database may have changed: another connection committed, or this one wrote. */
  stamp(): string
}

const MAX_KEYS = 10_000
const caches = new WeakMap<Db, ReadCache>()

/** The one read cache of a database connection, shared by its stores. */
export function readCache(db: Db): ReadCache {
  let cache = caches.get(db)
  if (!cache) caches.set(db, (cache = createReadCache(db)))
  return cache
}

/** The cache of a connection that is closing lets go of its file; a later use opens a new one. */
export function closeReadCache(db: Db): void {
  caches.get(db)?.close()
  caches.delete(db)
}

/**
 * What moves whenever any connection commits to the file: a number that changes when the header
 * of its WAL index does. In WAL mode (db/sqlite/client.ts) every commit of every connection, in
 * any process, ends by rewriting the first 48 bytes of the `-shm` file, the WAL-index header, with
 * a counter of changes among them ("iChange", https://www.sqlite.org/walformat.html, section 2.2),
 * and a reader sees the commit only once the header says so. Reading those bytes is one pread of
 * shared memory (0.6 us), where `PRAGMA data_version` opens a read transaction to learn the same,
 * with its locks (2 to 5 us). Without a WAL index to read (a private `:memory:` database, which
 * no other connection can change, or a file whose index cannot be opened), data_version answers.
 */
function versionReader(db: Db): { read(): unknown; close(): void } {
  let fd: number | undefined
  try {
    if (!db.$client.memory) fd = openSync(`${db.$client.name}-shm`, 'r')
  } catch {
    // No index to read: the statement below answers instead.
  }
  if (fd === undefined) {
    const dataVersion = db.$client.prepare('pragma data_version').pluck()
    return { read: () => dataVersion.get(), close() {} }
  }
  const header = Buffer.alloc(WAL_INDEX_HEADER_BYTES)
  const seen = Buffer.alloc(WAL_INDEX_HEADER_BYTES)
  let changes = 0
  return {
    read() {
      readSync(fd, header, 0, WAL_INDEX_HEADER_BYTES, 0)
      if (!header.equals(seen)) {
        header.copy(seen)
        changes++
      }
      return changes
    },
    close: () => closeSync(fd),
  }
}
const WAL_INDEX_HEADER_BYTES = 48

function createReadCache(db: Db): ReadCache {
  const version = versionReader(db)
  const totalChanges = db.$client.prepare('select total_changes()').pluck()
  const maps: Array<Map<string, Promise<unknown>>> = []
  let seenVersion: unknown
  let seenChanges: unknown

  // The version costs a system call (0.6 us idle, 2 us and more under load; total_changes() 0.2
  // us), so it is not read for every look-up. Without a server (a command, a test of the stores),
  // a version read is kept for one synchronous run of code, in which nothing another process
  // commits can be seen anyway. In a server, which tells the cache of every request's arrival and
  // waits for its admission, the requests that arrived in one turn of the event loop are admitted
  // together and the version read once after them, kept until the loop turns: a version read
  // after a request arrived is as fresh as that request needs, since what committed before it
  // arrived committed before the read. So the requests of a busy turn, a dozen and more, take one
  // read between them (docs/decisions.md, "The authentication path's reads are cached").
  let versionRead = false
  let lastVersion: unknown
  let told = false
  let turning: NodeJS.Immediate | undefined
  const forgetVersion = () => {
    versionRead = false
    turning = undefined
  }
  // The requests that arrived since the last admission, admitted in the check phase of the loop,
  // which comes after the poll phase has read every socket that had a request.
  let arriving: Array<() => void> = []
  const admitArrived = () => {
    const admitted = arriving
    arriving = []
    forgetVersion()
    for (const admit of admitted) admit()
  }
  function currentVersion() {
    if (!versionRead) {
      lastVersion = version.read()
      versionRead = true
      if (!told) queueMicrotask(forgetVersion)
      else turning ??= setImmediate(forgetVersion)
    }
    return lastVersion
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
    arrived(admit) {
      told = true
      arriving.push(admit)
      if (arriving.length === 1) setImmediate(admitArrived)
    },

    close: () => version.close(),

    stamp: () => `${version.read()}:${totalChanges.get()}`,

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
