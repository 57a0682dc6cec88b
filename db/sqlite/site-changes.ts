import { siteWatchers, type SiteChanges } from '../engine.ts'
import type { Db } from './client.ts'
import { readCache } from './read-cache.ts'

/** How often the file's change counter is read while a page watches a site (docs/decisions.md, "The team's queue"). */
export const SITE_CHANGES_EVERY_MS = 200

/**
 * The sites' changes on SQLite (db/engine.ts, SiteChanges). While anything watches, the change
 * counter the read cache watches (the WAL index's header, moved by every commit of every
 * connection, and this connection's own count of changes) is read every SITE_CHANGES_EVERY_MS:
 * under a microsecond. Only when it moved are the watched sites' versions read, and the watchers
 * of a site whose version moved told. Nothing is read inside a transaction of this connection,
 * whose writes are not committed yet.
 */
export function sqliteSiteChanges(db: Db, everyMs = SITE_CHANGES_EVERY_MS): SiteChanges & { close(): void } {
  const watchers = siteWatchers()
  const versionOf = db.$client.prepare('SELECT version FROM sites WHERE id = ?').pluck()
  const seen = new Map<number, unknown>()
  let stamp: string | undefined
  let timer: NodeJS.Timeout | undefined

  function check() {
    if (db.$client.inTransaction || !db.$client.open) return
    const now = readCache(db).stamp()
    if (now === stamp) return
    try {
      for (const siteId of watchers.sites()) {
        const version = versionOf.get(siteId)
        if (version === seen.get(siteId)) continue
        seen.set(siteId, version)
        watchers.fire(siteId)
      }
      stamp = now
    } catch {
      // A read refused for a moment (the file busy past the timeout, an I/O error): the next turn
      // reads again; a live page meanwhile shows what it showed, as a page without the stream does.
    }
  }

  return {
    watch(siteId, handler) {
      // The version the watcher starts from; in a transaction (or on a closed connection) none, so
      // the first check tells it once.
      if (!watchers.sites().includes(siteId)) seen.set(siteId, db.$client.inTransaction || !db.$client.open ? undefined : versionOf.get(siteId))
      const stop = watchers.add(siteId, handler)
      timer ??= setInterval(check, everyMs).unref()
      return () => {
        stop()
        if (!watchers.sites().includes(siteId)) seen.delete(siteId)
        if (watchers.size === 0) timer = (clearInterval(timer), undefined)
      }
    },
    close: () => timer = (clearInterval(timer), undefined),
  }
}
