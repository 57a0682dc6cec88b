import fp from 'fastify-plugin'
import type { EngineEvents } from '../db/engine.ts'
import type { Clock } from '../lib/clock.ts'

// Who else is on a discussion's page (issue 71; docs/decisions.md, "Who is here"). Each process
// keeps in memory who of the staff has which discussion's page open, and who is writing a reply
// there, from the words every process publishes on the database's events (db/engine.ts: NOTIFY on
// PostgreSQL, the process's own bus on SQLite, whose one process serves the file). Nothing is
// written to the database, and nothing outlives the processes: a page's live stream says "here"
// when it opens and every PRESENCE_BEAT_MS while open, and "left" when it closes; typing in the
// reply form says "replying" every REPLYING_BEAT_MS at most. A word not renewed lapses
// (PRESENCE_TTL_MS, REPLYING_TTL_MS), for a process that stopped without saying "left".

/** How often an open page says it is still there. */
export const PRESENCE_BEAT_MS = 5_000
/** How long "here" lasts without being said again. */
export const PRESENCE_TTL_MS = 12_000
/** How often a page being typed in says so, at most. */
export const REPLYING_BEAT_MS = 2_000
/** How long "replying" lasts after it was last said: typing has stopped by then. */
export const REPLYING_TTL_MS = 5_000
/** How often the lapsed words are looked for (while there are any). */
const SWEEP_MS = 1_000
const CHANNEL = 'presence'

export type PresenceState = 'here' | 'replying' | 'left'

/** One word of a person on a discussion's page, as it is published. */
export interface PresenceWord {
  site: number
  number: number
  user: number
  name: string
  state: PresenceState
}

/** Someone else on the page, as it shows them. */
export interface Present {
  name: string
  replying: boolean
}

/** The word in a payload, or undefined for anything else (a payload of another version, or none). */
function wordOf(payload: string): PresenceWord | undefined {
  try {
    const word = JSON.parse(payload) as Partial<PresenceWord>
    const whole = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n > 0
    if (!whole(word.site) || !whole(word.number) || !whole(word.user) || typeof word.name !== 'string') return undefined
    return word.state === 'here' || word.state === 'replying' || word.state === 'left' ? (word as PresenceWord) : undefined
  } catch {
    return undefined
  }
}

/** The presences of this process: what it heard, who watches which page, and the sweep of what lapsed. */
export function createPresence(events: EngineEvents, clock: Clock) {
  const pages = new Map<string, Map<number, { name: string; hereUntil: number; replyingUntil: number }>>()
  const watchers = new Map<string, Set<() => void>>()
  const keyOf = (site: number, number: number) => `${site}:${number}`
  let sweep: NodeJS.Timeout | undefined

  const tell = (key: string) => {
    for (const watcher of watchers.get(key) ?? []) watcher()
  }

  function heard(word: PresenceWord): void {
    const key = keyOf(word.site, word.number)
    const people = pages.get(key) ?? new Map()
    const now = clock()
    if (word.state === 'left') people.delete(word.user)
    else {
      const was = people.get(word.user)
      people.set(word.user, {
        name: word.name,
        hereUntil: now + PRESENCE_TTL_MS,
        replyingUntil: word.state === 'replying' ? now + REPLYING_TTL_MS : (was?.replyingUntil ?? 0),
      })
      sweep ??= setInterval(lapse, SWEEP_MS).unref()
    }
    if (people.size === 0) pages.delete(key)
    else pages.set(key, people)
    tell(key)
  }

  /** Drops what lapsed, telling the pages whose people changed; stops once nobody is anywhere. */
  function lapse(): void {
    const now = clock()
    for (const [key, people] of pages) {
      let changed = false
      for (const [user, p] of people) {
        if (p.hereUntil <= now) changed = people.delete(user)
        else if (p.replyingUntil !== 0 && p.replyingUntil <= now) {
          p.replyingUntil = 0
          changed = true
        }
      }
      if (people.size === 0) pages.delete(key)
      if (changed) tell(key)
    }
    if (pages.size === 0) {
      clearInterval(sweep)
      sweep = undefined
    }
  }

  return {
    /** Starts hearing every process's words (the app's start). */
    listen: () => events.subscribe(CHANNEL, (payload) => void ((word) => word && heard(word))(wordOf(payload))),
    /** Says a word, to every process (this one too). */
    say: (word: PresenceWord) => events.publish(CHANNEL, JSON.stringify({ ...word, name: word.name.slice(0, 100) })),
    /** Who is on the page besides `me`, by name. */
    others(site: number, number: number, me: number): Present[] {
      const now = clock()
      return [...(pages.get(keyOf(site, number)) ?? [])]
        .filter(([user, p]) => user !== me && p.hereUntil > now)
        .map(([, p]) => ({ name: p.name, replying: p.replyingUntil > now }))
        .sort((a, b) => a.name.localeCompare(b.name))
    },
    /** Calls `watcher` whenever the page's people change; the returned function stops it. */
    watch(site: number, number: number, watcher: () => void): () => void {
      const key = keyOf(site, number)
      const set = watchers.get(key) ?? new Set()
      set.add(watcher)
      watchers.set(key, set)
      return () => {
        set.delete(watcher)
        if (set.size === 0) watchers.delete(key)
      }
    },
    /** Stops the sweep (the app's close). */
    close: () => clearInterval(sweep),
  }
}

export type Presence = ReturnType<typeof createPresence>

declare module 'fastify' {
  interface FastifyInstance {
    presence: Presence
  }
}

export default fp(
  async (fastify) => {
    const presence = createPresence(fastify.database.events, fastify.clock)
    fastify.decorate('presence', presence)
    // Not hearing the others yet is no reason not to serve: the engine keeps trying (db/engine.ts, EngineEvents).
    fastify.addHook('onReady', async () => {
      await presence.listen().catch((error: unknown) => fastify.log.warn({ err: error }, "could not hear the other processes' presence on discussions yet; trying again"))
    })
    fastify.addHook('onClose', async () => presence.close())
  },
  { name: 'presence', fastify: '5.x', dependencies: ['database', 'config'] },
)
