import { lookup as dnsLookup } from 'node:dns/promises'
import type { Agent } from 'node:http'
import type { LookupFunction } from 'node:net'
import { literalAddress, refusedAddress, refusedClass, type AllowedRange } from '../../lib/webhook-address.ts'

// Node's http and https as its CommonJS modules: an ES import of `node:http` makes Node build the
// module's ES namespace, which reads every export, and Node 24's http exports WebSocket through a
// getter that loads undici (its fetch; 745 KB of source and about 3 MB of heap) into every process
// at start (docs/decisions.md, "What a start paid for without asking").
const http = process.getBuiltinModule('node:http')
const https = process.getBuiltinModule('node:https')

// One try of a webhook delivery (docs/decisions.md, "Webhooks"): the host's addresses looked up
// once and each checked (lib/webhook-address.ts), the connection made to the address checked (the
// request's own look-up answers with it: no second look-up for a name to change its answer in
// between), a POST with a deadline over the whole exchange, no redirect followed, and the first
// bytes of the answer kept for the log. Written on Node's http rather than a client library: the
// one thing asked of a client here, connecting to an address we chose for a name we keep, is
// Node's own `lookup` option.

/** How many characters of an answer the log keeps. */
export const ANSWER_KEPT = 500

export type Resolve = (hostname: string) => Promise<Array<{ address: string; family: number }>>

const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

/** The address to connect to for `url`; or why none may be (`refused`); or why none was found now (`unknown`: tried again later). */
export async function target(url: URL, allowed: readonly AllowedRange[], resolve: Resolve = systemResolve): Promise<{ address: string; family: number } | { refused: string } | { unknown: string }> {
  const literal = literalAddress(url.hostname)
  if (literal) {
    const refused = refusedAddress(literal, allowed)
    return refused ? { refused } : { address: literal, family: literal.includes(':') ? 6 : 4 }
  }
  let found: Array<{ address: string; family: number }>
  try {
    found = await resolve(url.hostname)
  } catch (error) {
    return { unknown: `${url.hostname} could not be looked up (${(error as NodeJS.ErrnoException).code ?? 'no answer'})` }
  }
  // Every address the name has is checked: a name with one public and one private address is refused.
  for (const { address } of found) {
    const refused = refusedClass(address, allowed)
    if (refused) return { refused: `${url.hostname} is ${refused.words} (${address})` }
  }
  if (found.length === 0) return { unknown: `${url.hostname} has no address` }
  return found[0]!
}

export interface Answer {
  status: number
  /** The first ANSWER_KEPT characters of the body. */
  answer: string
  location: string | undefined
}

/** How many connections' pools are kept (an endpoint at an address), and how long an idle connection stays open: under the 5 s a Node server keeps one. */
const AGENTS_KEPT = 100
const IDLE_MS = 4_000
/** An answer longer than this is not read to its end: its connection is closed instead of kept. */
const ANSWER_READ = 64 * 1024

/**
 * Keep-alive connections, one pool per endpoint and checked address: a connection is only ever to
 * the address its pool's look-up answers with, so a kept one is as checked as a new one. The
 * oldest pool goes when there are AGENTS_KEPT.
 */
export function createConnections(kept = AGENTS_KEPT) {
  const agents = new Map<string, Agent>()
  return {
    agentFor(url: URL, to: { address: string; family: number }): Agent {
      const key = `${url.protocol}//${url.host} ${to.address}`
      let agent = agents.get(key)
      if (!agent) {
        // The request's own look-up answers with the address checked: one address of the family given, so Node asks for one.
        const lookup: LookupFunction = (_hostname, _options, callback) => callback(null, to.address, to.family)
        const options = { keepAlive: true, maxSockets: 4, timeout: IDLE_MS, lookup, family: to.family }
        agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options)
        agents.set(key, agent)
        if (agents.size > kept) {
          const [oldest, pool] = agents.entries().next().value!
          agents.delete(oldest)
          pool.destroy()
        }
      }
      return agent
    },
    close(): void {
      for (const agent of agents.values()) agent.destroy()
      agents.clear()
    },
  }
}

export type Connections = ReturnType<typeof createConnections>

/**
 * POSTs `body` to `url` through `agent` (connecting to the address checked); rejects with words when
 * no answer came in `timeoutMs`. A kept connection the endpoint closed as it was reused (its idle
 * time ran out as the request left: the request fails before any answer, ECONNRESET or EPIPE) is
 * tried once more on a new connection within the same deadline, as Node's documentation of
 * `request.reusedSocket` advises: an event may arrive twice, as it may after any retry, and the
 * receiver tells by its id (docs/decisions.md, "Webhooks").
 */
export function post(url: URL, agent: Agent, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Answer> {
  const deadline = performance.now() + timeoutMs
  return postOnce(url, agent, headers, body, timeoutMs).catch((error: NodeJS.ErrnoException & { reused?: boolean }) => {
    if (!error.reused || (error.code !== 'ECONNRESET' && error.code !== 'EPIPE')) throw error
    return postOnce(url, agent, headers, body, Math.max(1, deadline - performance.now()))
  })
}

function postOnce(url: URL, agent: Agent, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Answer> {
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const request = client.request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) }, agent })
    const deadline = setTimeout(() => request.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: 'TIMEOUT' })), timeoutMs)
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(deadline)
      reject(Object.assign(new Error(error.code === 'TIMEOUT' ? error.message : `${error.code ?? 'error'}: ${error.message}`), { code: error.code, reused: request.reusedSocket }))
    })
    request.on('response', (response) => {
      let answer = ''
      let read = 0
      const done = () => {
        clearTimeout(deadline)
        resolve({ status: response.statusCode!, answer: answer.slice(0, ANSWER_KEPT), location: response.headers.location })
      }
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        if (answer.length < ANSWER_KEPT) answer += chunk
        read += chunk.length
        // Read to its end, the connection is kept for the next delivery; a long answer closes it.
        if (read > ANSWER_READ) {
          response.destroy()
          done()
        }
      })
      response.on('end', done)
      response.on('error', done)
    })
    request.end(body)
  })
}
