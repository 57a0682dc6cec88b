import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Authenticated } from '../auth/types.ts'
import { repeatInBackground } from '../background.ts'
import type { Claim, KeptAnswer, KeyOwner } from '../../db/stores/idempotency.ts'
import { InvalidRequest } from './validation.ts'
import { canonicalJson } from '../../lib/canonical-json.ts'

// Idempotency-Key on the API's POSTs (docs/decisions.md, "Safe retries, cursors and the change
// feed"; draft-ietf-httpapi-idempotency-key-header). The first request with a key claims it (a
// row every process on the database shares, db/stores/idempotency.ts) before its handler runs;
// when it succeeds its answer is kept, sealed, for 24 hours, and a repeat with the same key and
// the same request gets that answer again. A refused request wrote nothing (every change is one
// transaction), so it lets the key go and a repeat runs anew. The same key with another request
// is a 422; a repeat while the first is still running waits for its answer, and is a 409 if it
// has none after `waitMs`.

declare module 'fastify' {
  interface FastifyRequest {
    /** The key this request claimed, until its answer is kept or the key let go. */
    idempotency?: { owner: KeyOwner; key: string; at: Date }
  }
}

/** The headers of a first answer a repeat is sent again; the others are the repeat's own. */
const KEPT_HEADERS = ['content-type', 'location', 'etag', 'link'] as const

/** The POSTs that take no key: MCP's JSON-RPC (its tools' requests are the API's own), and an upload (a repeat makes an unused upload, swept within a day). */
const WITHOUT_KEYS = new Set(['/:site/mcp', '/:site/uploads'])

/** The most characters a key may have. */
export const MAX_KEY_LENGTH = 255

/**
 * The key an Idempotency-Key header holds: a Structured Field string (RFC 8941: quoted, `\"` and
 * `\\` escaped) as the draft has it, or the bare value Stripe's clients send; 1 to 255 visible
 * ASCII characters. Undefined when it is neither.
 */
export function keyOf(header: string): string | undefined {
  let key = header.trim()
  if (key.startsWith('"')) {
    const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(key)
    if (!quoted) return undefined
    key = quoted[1].replace(/\\(["\\])/g, '$1')
  }
  return key.length >= 1 && key.length <= MAX_KEY_LENGTH && /^[\x20-\x7e]+$/.test(key) ? key : undefined
}

/** Whose keys these are: the credential's kind and which one (a token's id, a grant), never its value. */
export function credentialOf(auth: Authenticated): string {
  if (auth.tokenId !== undefined) return `personal_token:${auth.tokenId}`
  if (auth.grant !== undefined) return `oauth_token:${auth.grant}`
  return `${auth.method}:${auth.user.id}`
}

/** What a repeat must match: the method, the address as sent, and the body as read (a multipart post's files by their digests). */
function fingerprintOf(request: FastifyRequest): string {
  const body = request.uploadedDigests === undefined ? request.body : { ...(request.body as object), uploads: request.uploadedDigests }
  return createHash('sha256').update(`${request.method} ${request.url}\n${canonicalJson(body ?? null)}`).digest('base64url')
}

/** A route's hooks of one kind as a list (Fastify takes one, a list, or none). */
const hooksOf = <H>(hooks: H | H[] | undefined): H[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks])

export default fp<{ waitMs?: number; pollMs?: number; pruneEveryMs?: number }>(
  async (fastify, { waitMs = 10_000, pollMs = 25, pruneEveryMs = 60 * 60 * 1000 }) => {
    const store = fastify.idempotencyKeys

    async function repeat(request: FastifyRequest, reply: FastifyReply, answer: KeptAnswer) {
      // A multipart repeat uploaded its files again: they go, as the first request's are the ones kept.
      if (request.uploaded) await fastify.files.discard(request.auth!.site.id, request.auth!.user.id, request.uploaded)
      for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value)
      return reply.code(answer.status).header('idempotent-replayed', 'true').send(answer.body)
    }

    /** Claims the request's key before its handler runs; a repeat is answered here, without it. */
    async function claimKey(request: FastifyRequest, reply: FastifyReply) {
      const header = request.headers['idempotency-key']
      if (header === undefined) return
      // Sent twice, it names no one key.
      const key = typeof header === 'string' ? keyOf(header) : undefined
      if (key === undefined) {
        throw new InvalidRequest([{ field: 'Idempotency-Key', problem: `must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters, as a quoted string ("...") or bare` }])
      }
      const owner = { siteId: request.auth!.site.id, credential: credentialOf(request.auth!) }
      const fingerprint = fingerprintOf(request)
      let claim: Claim = await store.claim(owner, key, fingerprint)
      // The first request with this key is still running: its answer is this one's too, once it has one.
      const until = Date.now() + waitMs
      while (!claim.claimed && !claim.mismatch && claim.answer === undefined && Date.now() < until) {
        await sleep(pollMs)
        claim = await store.look(owner, key, fingerprint)
      }
      if (claim.claimed) {
        request.idempotency = { owner, key, at: claim.at }
        return
      }
      if (claim.mismatch) {
        return reply.code(422).send({ error: 'idempotency_key_reused', message: 'This Idempotency-Key was sent with another request (method, address or body) within the last 24 hours; send a new key for a new request.' })
      }
      if (claim.answer !== undefined) return repeat(request, reply, claim.answer)
      return reply
        .code(409)
        .header('retry-after', '1')
        .send({ error: 'idempotency_key_in_use', message: 'The first request with this Idempotency-Key is still being answered; repeat it in a moment to get its answer.' })
    }

    /** Keeps the claimed request's answer when it succeeded, else lets its key go. */
    async function keepAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
      const held = request.idempotency
      if (!held) return payload
      request.idempotency = undefined
      const { owner, key, at } = held
      try {
        // A POST of the API answers JSON text; a customer's export answers a stream, whose key is let go (a repeat exports again).
        if (reply.statusCode >= 200 && reply.statusCode < 300 && typeof payload === 'string') {
          const headers: Record<string, string> = {}
          for (const name of KEPT_HEADERS) {
            const value = reply.getHeader(name)
            if (value !== undefined) headers[name] = String(value)
          }
          await store.answered(owner, key, at, { status: reply.statusCode, headers, body: payload })
        } else {
          await store.release(owner, key, at)
        }
      } catch (error) {
        // The request's own answer stands (its change is made, or refused): the key stays claimed,
        // so a repeat is told 409 rather than run again, until it expires.
        request.log.warn({ err: error }, 'could not keep the answer of an Idempotency-Key')
      }
      return payload
    }

    // On the POST routes only, as each is added (the routes register after this plugin, in its
    // scope): a GET pays nothing for it, not even a hook's promise.
    fastify.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method]
      if (!methods.includes('POST') || WITHOUT_KEYS.has(route.url)) return
      route.preHandler = [...hooksOf(route.preHandler), claimKey]
      route.onSend = [...hooksOf(route.onSend), keepAnswer]
    })

    repeatInBackground(fastify, { firstAfterMs: pruneEveryMs, everyMs: pruneEveryMs }, async () => {
      try {
        const removed = await store.prune()
        if (removed > 0) fastify.log.info({ idempotencyKeys: { removed } }, 'Idempotency-Keys older than a day removed')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not remove old Idempotency-Keys')
      }
    })
  },
  { name: 'idempotency', fastify: '5.x', dependencies: ['discussion-stores'] },
)
