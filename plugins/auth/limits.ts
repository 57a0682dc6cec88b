import { createHmac, randomBytes } from 'node:crypto'
import fp from 'fastify-plugin'
import { EVENT_PAYLOAD_MAX_BYTES, type EngineEvents } from '../../db/engine.ts'
import { addressBlock } from '../../lib/address-block.ts'
import type { Clock } from '../../lib/clock.ts'
import { rateLimitHeaders, type Standing } from '../../lib/rate-limiter.ts'
import { createAttemptLimiter } from './attempt-limiter.ts'

// How failed authentication is slowed down. Every failed credential of any kind (a wrong, expired
// or revoked token, a wrong password, a bad multipass) counts against the client address; failed
// passwords also count against the account. Past the limit the address (or account) gets 429 with
// Retry-After until its window ends, whatever it sends, as the large API platforms do. Successful
// requests cost nothing here: they never count and never wait. Every check of the process, on the
// API and on the sign-in pages, goes through `attempt` below: the one place failures are counted.
//
// The processes serving one database share their failures (docs/decisions.md, "Shared between the
// processes"): each failure counted here, and each success that clears an account's failures, is
// published on the database's events (db/engine.ts), a few milliseconds later and in batches, and
// every process counts the others' in its own windows. No request reads anything for it: the
// budgets stay in memory. Attempts in flight are each process's own.

export interface AuthLimitSettings {
  /** Failed authentications of any kind from one client address per window, then 429. */
  perAddress: number
  /** Failed email-and-password checks of one account per window, then 429. */
  perAccount: number
  windowSeconds: number
}

export const DEFAULT_LIMITS: AuthLimitSettings = { perAddress: 20, perAccount: 5, windowSeconds: 300 }

/** What a spent budget answers, whatever the credential: the refusal of that name. */
export interface TooManyAttempts {
  kind: 'too_many_attempts'
  retryAfter: number
}

/** How a check ended for the budgets: a failure keeps its reservation, anything else gives it back. */
export type AttemptOutcome = 'failed' | 'succeeded' | 'neutral'

export interface AttemptKeys {
  /** The client address (request.ip); its budget is its block's (lib/address-block.ts). */
  address: string
  /** The account a password is tried for (its email key), for password checks only. */
  account?: string
}

/** What the other processes are told: a failure of an address (`a`) or an account (`u`), or an account's failures cleared (`c`). */
export type BudgetEvent = readonly ['a' | 'u' | 'c', string]

export interface AuthLimitOptions {
  /** The key an account's budget is kept under, from its email key (the plugin's is a keyed hash). */
  accountKey?: (account: string) => string
  /** Hears each failure counted and each account cleared, to tell the other processes. */
  share?: (event: BudgetEvent) => void
}

export function createAuthLimits(settings: AuthLimitSettings, clock: Clock, { accountKey = (account) => account, share = () => {} }: AuthLimitOptions = {}) {
  const windowMs = settings.windowSeconds * 1000
  const addresses = createAttemptLimiter({ max: settings.perAddress, windowMs, clock })
  const accounts = createAttemptLimiter({ max: settings.perAccount, windowMs, clock })

  return {
    settings,
    addresses,
    accounts,

    /** Counts what another process counted (shareBudgets): nothing here is told again. */
    apply(events: readonly BudgetEvent[]): void {
      for (const [kind, key] of events) {
        if (kind === 'a') addresses.fail([key])
        else if (kind === 'u') accounts.fail([key])
        else accounts.succeed([key])
      }
    },

    /**
     * Runs one credential check within the budgets of its keys. A spent budget answers 429 before
     * the check runs, whatever the credential (so a locked account never tells a right password
     * from a wrong one). Otherwise one attempt is reserved from each budget before the check, so
     * concurrent attempts cannot overrun it; a failed check keeps the reservation as a failure,
     * any other outcome gives it back, and a success also clears the account's failures counted
     * before it began (not those of attempts beside it, nor the address's: one good password must
     * not reset an address guessing at other accounts).
     */
    async attempt<R>(keys: AttemptKeys, check: () => R | Promise<R>, outcome: (result: R) => AttemptOutcome): Promise<R | TooManyAttempts> {
      const account = keys.account === undefined ? undefined : accountKey(keys.account)
      const address = addressBlock(keys.address)
      const held = [addresses.reserve(address), ...(account === undefined ? [] : [accounts.reserve(account)])]
      const taken = held.filter((reservation) => reservation.allowed)
      // A refused reservation waits at least a second (attempt-limiter.ts rounds up).
      if (taken.length < held.length) {
        for (const reservation of taken) reservation.release()
        return { kind: 'too_many_attempts', retryAfter: Math.max(...held.map((reservation) => (reservation.allowed ? 0 : reservation.retryAfter))) }
      }
      let result: R
      try {
        result = await check()
      } catch (error) {
        for (const reservation of taken) reservation.release()
        throw error
      }
      const ended = outcome(result)
      if (ended === 'failed') {
        for (const reservation of taken) reservation.fail()
        share(['a', address])
        if (account !== undefined) share(['u', account])
        return result
      }
      const [onAddress, onAccount] = taken
      onAddress.release()
      // Only a success that cleared something is told: a right password costs no message.
      if (ended === 'succeeded' && onAccount?.succeed()) share(['c', account!])
      else onAccount?.release()
      return result
    },
  }
}

export type AuthLimits = ReturnType<typeof createAuthLimits>

/**
 * The client address's failure budget as a standing for the RateLimit headers (lib/rate-limiter.ts),
 * under the policy name "failures": the limit, what is left of it, and when its window ends.
 */
export function failureStanding({ settings, addresses }: AuthLimits, address: string): Standing {
  const { limit, remaining, resetAt, resetSeconds } = addresses.status(addressBlock(address))
  return { policy: { name: 'failures', limit }, windowSeconds: settings.windowSeconds, remaining, resetSeconds, resetAt }
}

/** The failure budget's headers alone, for the sign-in pages. */
export const failureHeaders = (limits: AuthLimits, address: string) => rateLimitHeaders([failureStanding(limits, address)])

/** The events channel of the budgets. */
export const BUDGET_CHANNEL = 'auth_failures'
// An address is at most 45 characters (IPv6 with IPv4), an account's key 43 (base64url SHA-256).
const MAX_KEY = 100
const KINDS: readonly unknown[] = ['a', 'u', 'c']

const isBudgetEvent = (event: unknown): event is BudgetEvent =>
  Array.isArray(event) && event.length === 2 && KINDS.includes(event[0]) && typeof event[1] === 'string' && event[1].length <= MAX_KEY

/** A message of another process, or undefined when it is not one: anything else is ignored. */
function readMessage(payload: string): { from: string; events: BudgetEvent[] } | undefined {
  let message: unknown
  try {
    message = JSON.parse(payload)
  } catch {
    return undefined
  }
  const { from, events } = (message ?? {}) as { from?: unknown; events?: unknown }
  if (typeof from !== 'string' || !Array.isArray(events)) return undefined
  return { from, events: events.filter(isBudgetEvent) }
}

/**
 * Tells the other processes on the database what the budgets counted, and counts what they tell.
 * The events of one turn of the event loop go out together (as few messages as the payload limit
 * allows), in order; a process ignores its own. A message that cannot be sent (the database is
 * unreachable) is lost, and `onError` hears of the first of a run of them: meanwhile each process
 * counts only its own failures, as a single process does.
 */
export function shareBudgets(events: EngineEvents, onError: (error: unknown) => void) {
  const origin = randomBytes(8).toString('hex')
  const head = `{"from":"${origin}","events":[`
  let queue: string[] = []
  let pending: NodeJS.Immediate | undefined
  let failing = false

  function payloads(entries: string[]) {
    const all: string[] = []
    let batch: string[] = []
    let size = head.length + 2
    for (const entry of entries) {
      const bytes = Buffer.byteLength(entry) + 1
      if (batch.length > 0 && size + bytes > EVENT_PAYLOAD_MAX_BYTES) {
        all.push(`${head}${batch.join(',')}]}`)
        batch = []
        size = head.length + 2
      }
      batch.push(entry)
      size += bytes
    }
    all.push(`${head}${batch.join(',')}]}`)
    return all
  }

  /** Publishes what is queued; resolves when it is sent or given up. */
  async function flush(): Promise<void> {
    clearImmediate(pending)
    pending = undefined
    if (queue.length === 0) return
    const entries = queue
    queue = []
    // All asked for at once, so that they go out in order, before those of a later turn.
    const sent = payloads(entries).map((payload) =>
      events.publish(BUDGET_CHANNEL, payload).then(
        () => void (failing = false),
        (error: unknown) => {
          if (!failing) onError(error)
          failing = true
        },
      ),
    )
    await Promise.all(sent)
  }

  return {
    send(event: BudgetEvent): void {
      queue.push(JSON.stringify(event))
      pending ??= setImmediate(() => void flush())
    },
    flush,
    /** Counts the other processes' events into `limits` from now on. */
    listen(limits: Pick<AuthLimits, 'apply'>): Promise<void> {
      return events.subscribe(BUDGET_CHANNEL, (payload) => {
        const message = readMessage(payload)
        if (message && message.from !== origin) limits.apply(message.events)
      })
    },
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The failed-authentication budgets of the process, per client address and per account. */
    authLimits: AuthLimits
  }
}

/**
 * One set of budgets for the whole process: the API's credentials and the sign-in page share it,
 * and it shares its failures with the other processes on the database. An account's budget is kept
 * (and told) under a keyed hash of its email key: the messages go through the database, where any
 * session may LISTEN and a statement log may keep them, and an email names a person.
 */
export default fp<{ settings: AuthLimitSettings }>(
  async (fastify, { settings }) => {
    const key = createHmac('sha256', fastify.serverKey).update('service-desk failure budgets').digest()
    const shared = shareBudgets(fastify.database.events, (error) => {
      fastify.log.warn({ err: error }, 'could not tell the other processes of an authentication failure; each counts its own until it can')
    })
    const limits = createAuthLimits(settings, fastify.clock, {
      accountKey: (account) => createHmac('sha256', key).update(account).digest('base64url'),
      share: shared.send,
    })
    fastify.decorate('authLimits', limits)
    await shared.listen(limits).catch((error: unknown) => {
      fastify.log.warn({ err: error }, "could not hear the other processes' authentication failures yet; trying again")
    })
    // Before the database closes (onClose hooks run in the reverse order of registration).
    fastify.addHook('onClose', async () => {
      await shared.flush()
    })
  },
  { name: 'auth-limits', fastify: '5.x', dependencies: ['config', 'server-key', 'database'] },
)
