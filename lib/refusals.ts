// What the service refuses below the routes: connections past a cap, requests cut by a timeout,
// clients that went away mid-request, bodies over the limit, bytes that are not HTTP. Each gets a
// log line (warn) with the client address and what happened, never a header value or a body; and
// they are counted, so that a burst writes a summary a second rather than a line per refusal.

export type RefusalKind =
  | 'headers_timeout'
  | 'request_timeout'
  | 'client_gone'
  | 'body_too_large'
  | 'headers_too_large'
  | 'not_http'
  | 'connect'
  | 'connection_cap'
  | 'address_cap'
  | 'accept_failed'
  | 'rate_limited'

export const REFUSAL_MESSAGES: Record<RefusalKind, string> = {
  headers_timeout: 'connection closed: the request headers did not arrive in time',
  request_timeout: 'request cut: it did not arrive in full in time',
  client_gone: 'the client went away before sending the whole request',
  body_too_large: 'request refused: the body is larger than the limit',
  headers_too_large: 'request refused: the headers are larger than the limit',
  not_http: 'request refused: not valid HTTP/1.1',
  connect: 'CONNECT refused',
  connection_cap: 'connection refused: the server is at its connection limit',
  address_cap: 'connection refused: this address is at its own connection limit',
  accept_failed: 'a connection could not be accepted',
  rate_limited: 'request refused: past its rate limit',
}

/** What a refusal line may carry: built by our code from the socket and the request line only. */
export interface RefusalFields {
  address?: string
  status?: number
  method?: string
  /** Already redacted (lib/redact.ts). */
  url?: string
  /** A constant error code (HPE_INVALID_METHOD, EMFILE), never an error's message or its bytes. */
  code?: string
  during?: 'headers' | 'body'
  /** The name of a rate limit's policy (reads, writes, anonymous), never its key. */
  policy?: string
}

export interface RefusalLogger {
  warn(fields: object, message: string): void
}

export interface RefusalLogOptions {
  /** The window of counting, in ms: 1 s by default. */
  windowMs?: number
  /** Refusals of one kind written one by one in a quiet window before the rest are only counted. */
  linesPerWindow?: number
  /** Distinct addresses counted per window; more are counted together as "other". */
  maxAddresses?: number
  /** The clock and the timer of the windows: the wall clock and Node's timers unless a test drives its own. */
  timers?: RefusalTimers
}

export interface RefusalTimers {
  now(): number
  /** Runs `callback` after `ms`, unless the returned function is called first. */
  start(callback: () => void, ms: number): () => void
}

const NODE_TIMERS: RefusalTimers = {
  now: () => Date.now(),
  start(callback, ms) {
    const timer = setTimeout(callback, ms).unref()
    return () => clearTimeout(timer)
  },
}

interface KindState {
  /** Start of the current window of single lines (quiet), or of the summary being counted (burst). */
  since: number
  lines: number
  burst: boolean
  counted: number
  addresses: Map<string, number>
  /** Stops the timer of the window being counted, if one runs. */
  stopTimer: (() => void) | null
}

export interface RefusalLog {
  record(kind: RefusalKind, fields?: RefusalFields): void
  /** Writes the summaries still being counted (at shutdown) and stops their timers. */
  flush(): void
}

const TOP_ADDRESSES = 5
const OTHER = 'other'

/**
 * Per kind: in a quiet window, the first `linesPerWindow` refusals are written one line each. One
 * more in the same window starts a burst: from then on refusals of that kind are only counted, and
 * each window that counted any ends with one summary line (how many, how many addresses, the
 * busiest ones). A window that counts none ends the burst.
 */
export function createRefusalLog(log: () => RefusalLogger, options: RefusalLogOptions = {}): RefusalLog {
  const windowMs = options.windowMs ?? 1000
  const linesPerWindow = options.linesPerWindow ?? 5
  const maxAddresses = options.maxAddresses ?? 1000
  const timers = options.timers ?? NODE_TIMERS
  const states = new Map<RefusalKind, KindState>()

  function summarise(kind: RefusalKind, state: KindState, now: number) {
    const top = [...state.addresses]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP_ADDRESSES)
      .map(([address, count]) => ({ address, count }))
    const seconds = Math.round((now - state.since) / 100) / 10
    log().warn(
      { refusal: kind, count: state.counted, addresses: state.addresses.size, top, seconds },
      `${state.counted} more in ${seconds} s: ${REFUSAL_MESSAGES[kind]}`,
    )
    state.counted = 0
    state.addresses.clear()
    state.since = now
  }

  function startWindow(kind: RefusalKind, state: KindState) {
    state.stopTimer = timers.start(() => endOfWindow(kind, state), windowMs)
  }

  function endOfWindow(kind: RefusalKind, state: KindState) {
    const now = timers.now()
    if (state.counted > 0) {
      summarise(kind, state, now)
      startWindow(kind, state)
      return
    }
    // A window without a refusal of this kind: back to single lines.
    state.burst = false
    state.stopTimer = null
    state.since = now
    state.lines = 0
  }

  return {
    record(kind, fields = {}) {
      const now = timers.now()
      let state = states.get(kind)
      if (!state) {
        state = { since: now, lines: 0, burst: false, counted: 0, addresses: new Map(), stopTimer: null }
        states.set(kind, state)
      }
      if (!state.burst) {
        if (now - state.since >= windowMs) {
          state.since = now
          state.lines = 0
        }
        if (state.lines < linesPerWindow) {
          state.lines++
          log().warn({ refusal: kind, ...fields }, REFUSAL_MESSAGES[kind])
          return
        }
        state.burst = true
        state.since = now
        startWindow(kind, state)
      }
      state.counted++
      const address = fields.address ?? 'unknown'
      const key = state.addresses.has(address) || state.addresses.size < maxAddresses ? address : OTHER
      state.addresses.set(key, (state.addresses.get(key) ?? 0) + 1)
    },

    flush() {
      const now = timers.now()
      for (const [kind, state] of states) {
        state.stopTimer?.()
        if (state.counted > 0) summarise(kind, state, now)
        state.stopTimer = null
        state.burst = false
        state.lines = 0
      }
    },
  }
}
