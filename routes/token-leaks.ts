import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { StoreError } from '../db/stores/errors.ts'
import { tokenDetail } from '../db/stores/security-log.ts'
import {
  fingerprint,
  isWellFormedToken,
  OAUTH_ACCESS_TOKEN_PREFIX,
  OAUTH_REFRESH_TOKEN_PREFIX,
  PERSONAL_TOKEN_PREFIX,
} from '../lib/token-format.ts'
import { permalinkOfResource } from '../lib/urls.ts'
import { ErrorBody } from './schemas.ts'

// POST {base_url}/token_leaks: a secret scanner (a code host's partner programme, an
// administrator's own scanner) reports token values it found in public; every live one is
// revoked at once (docs/decisions.md, "Token lifecycle"). Signed with an HMAC of the body under
// SERVICE_LEAK_REPORT_KEY; without that key the endpoint does not exist (404).

export const MAX_LEAKS = 1_000
export const SIGNATURE_HEADER = 'service-signature'
/** When the report was signed, in Unix seconds; part of what is signed, so a report cannot be replayed later. */
export const TIMESTAMP_HEADER = 'service-signature-timestamp'
/** How old (or how far ahead, for a scanner's clock) a report may be. */
export const MAX_REPORT_AGE_S = 5 * 60

// What one leak may hold, each a string of at most this many characters; `token` is required.
const LEAK_FIELDS: Record<string, number> = { token: 500, url: 2_000, source: 200 }
const Leak = Type.Object({ token: Type.String(), url: Type.Optional(Type.String()), source: Type.Optional(Type.String()) })
export type LeakStatus = 'revoked' | 'already_inactive' | 'unknown'
const LeakAnswer = Type.Object({ results: Type.Array(Type.Object({ status: Type.Enum(['revoked', 'already_inactive', 'unknown']) })) })

/** `sha256=<hex>` of `<timestamp>.<body>` under the key. */
export function leakSignature(key: string, timestamp: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', key).update(`${timestamp}.`).update(body).digest('hex')}`
}

/** Whether the report is signed with the key, and signed within MAX_REPORT_AGE_S of now. */
export function signedRecently(key: string, body: Buffer, headers: { signature: unknown; timestamp: unknown }, nowMs: number): boolean {
  const { signature, timestamp } = headers
  if (typeof signature !== 'string' || typeof timestamp !== 'string' || !/^\d{1,12}$/.test(timestamp)) return false
  const expected = Buffer.from(leakSignature(key, timestamp, body))
  const actual = Buffer.from(signature.trim())
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return false
  return Math.abs(nowMs / 1000 - Number(timestamp)) <= MAX_REPORT_AGE_S
}

const tokenLeakRoutes: FastifyPluginAsyncTypebox<{ key: string | undefined }> = async (fastify, { key }) => {
  const { tokens, oauthRecords, securityLog, sites, clock } = fastify

  /** A personal token found in public: revoked, with a line in its owner's security log. */
  async function personalToken(value: string, leak: Static<typeof Leak>): Promise<LeakStatus> {
    const token = await tokens.lookup(value)
    if (!token) return 'unknown'
    if (token.revokedAt || token.expiresAt.getTime() <= clock()) return 'already_inactive'
    let revoked: Awaited<ReturnType<typeof tokens.revoke>>
    try {
      revoked = await tokens.revoke(token.siteId, token.id, undefined, true)
    } catch (error) {
      // Revoked meanwhile (by the page, the CLI, or a report naming it twice).
      if (error instanceof StoreError) return 'already_inactive'
      throw error
    }
    await securityLog.append({
      userId: token.userId,
      siteId: token.siteId,
      kind: 'token_revoked',
      actor: 'leak_report',
      detail: { ...tokenDetail(revoked), url: leak.url ?? null, source: leak.source ?? null },
    })
    return 'revoked'
  }

  /** An OAuth access or refresh token: its whole grant is revoked (the application's copy leaked). */
  async function oauthToken(model: 'AccessToken' | 'RefreshToken', value: string, leak: Static<typeof Leak>): Promise<LeakStatus> {
    const row = await oauthRecords.find(model, fingerprint(value))
    if (!row) return 'unknown'
    const payload = JSON.parse(row.payload) as { grantId: string; accountId: string; exp: number; clientId: string }
    const grant = await oauthRecords.find('Grant', fingerprint(payload.grantId))
    if (!grant || row.consumedAt || payload.exp * 1000 <= clock()) return 'already_inactive'
    if ((await oauthRecords.destroyGrant(payload.grantId)) === 0) return 'already_inactive'
    // The grant names the one site's API it is for: the event belongs to that site's log.
    const site = await sites.find(permalinkOfResource(grant.resource!, fastify.config.baseUrl) ?? '')
    await securityLog.append({
      userId: Number(payload.accountId),
      siteId: site?.id,
      kind: 'oauth_revoked',
      actor: 'leak_report',
      detail: { client_id: payload.clientId, url: leak.url ?? null, source: leak.source ?? null },
    })
    return 'revoked'
  }

  async function judge(leak: Static<typeof Leak>): Promise<LeakStatus> {
    const value = leak.token.trim()
    // A value without our prefix and checksum is no token of ours: no database read for it.
    if (isWellFormedToken(value, PERSONAL_TOKEN_PREFIX)) return personalToken(value, leak)
    if (isWellFormedToken(value, OAUTH_ACCESS_TOKEN_PREFIX)) return oauthToken('AccessToken', value, leak)
    if (isWellFormedToken(value, OAUTH_REFRESH_TOKEN_PREFIX)) return oauthToken('RefreshToken', value, leak)
    return 'unknown'
  }

  // The body is kept as it came, for the signature, and parsed only once that matches.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))

  fastify.post(
    '/token_leaks',
    { schema: { hide: true, response: { 200: LeakAnswer, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody } } },
    async (request, reply) => {
      if (!key) return reply.code(404).send({ error: 'not_found', message: 'There is nothing at POST /token_leaks.' })
      const raw = request.body as Buffer
      if (!signedRecently(key, raw, { signature: request.headers[SIGNATURE_HEADER], timestamp: request.headers[TIMESTAMP_HEADER] }, clock())) {
        return reply.code(401).send({
          error: 'invalid_signature',
          message:
            `Sign the report when you send it: ${TIMESTAMP_HEADER}: <Unix seconds, within ${MAX_REPORT_AGE_S} s of now>, ` +
            `${SIGNATURE_HEADER}: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">.`,
        })
      }
      let report: unknown
      try {
        report = JSON.parse(raw.toString('utf8'))
      } catch {
        return reply.code(400).send({ error: 'invalid_request', message: 'The body is not JSON.' })
      }
      if (!validReport(report)) {
        return reply
          .code(400)
          .send({ error: 'invalid_request', message: `The body is a JSON array of at most ${MAX_LEAKS} objects {"token", "url", "source"}, each a string.` })
      }
      const results: Array<{ status: LeakStatus }> = []
      // One at a time: a report names a value at most a few times, and each revocation is logged.
      for (const leak of report) results.push({ status: await judge(leak) })
      request.log.info({ leaks: { reported: report.length, revoked: results.filter((r) => r.status === 'revoked').length } }, 'token leak report')
      return { results }
    },
  )
}

/** Whether the parsed body is a report: an array of at most MAX_LEAKS leaks. */
function validReport(value: unknown): value is Array<Static<typeof Leak>> {
  return Array.isArray(value) && value.length <= MAX_LEAKS && value.every(validLeak)
}

function validLeak(value: unknown): value is Static<typeof Leak> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const leak = value as Record<string, unknown>
  if (typeof leak.token !== 'string') return false
  return Object.entries(leak).every(([name, field]) => Object.hasOwn(LEAK_FIELDS, name) && typeof field === 'string' && field.length <= LEAK_FIELDS[name])
}

export default tokenLeakRoutes
