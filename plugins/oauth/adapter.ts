import type { Adapter, AdapterPayload } from 'oidc-provider'
import type { OAuthRow, OAuthStore } from '../../db/stores/oauth.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { fingerprint } from '../../lib/token-format.ts'
import { UNUSED_CLIENT_TTL_S } from './anti-automation.ts'

// oidc-provider keeps its records (codes, tokens, grants, clients, interactions, its own browser
// sessions) through an adapter: this one writes them to the oauth_records table of whichever engine
// the service runs on (docs/decisions.md, "OAuth for applications"). The table never holds a
// usable value: every id is stored as its SHA-256 (an access token's id is the token itself) and
// the payload is stored without its `jti`, which is given back from the id the library asks for.

/**
 * How long an access token's record outlives the token, so that using it late is answered
 * "expired" (with the challenge's description), not "invalid". The library checks the payload's
 * own expiry, so the record's longer life gives nothing more to it.
 */
export const EXPIRED_TOKEN_KEPT_MS = 7 * DAY_MS

/** The payload's fields that the store keeps in columns of their own, to find rows by them. */
export function recordColumns(model: string, id: string, payload: AdapterPayload) {
  const text = (value: unknown) => (typeof value === 'string' ? value : null)
  const resources = payload.resources as Record<string, unknown> | undefined
  return {
    // A grant is found by its own id too, so that revoking it deletes it with its tokens.
    grantId: model === 'Grant' ? id : text(payload.grantId),
    uid: text(payload.uid),
    userCode: text(payload.userCode),
    accountId: text(payload.accountId),
    clientId: text(payload.clientId) ?? text(payload.client_id),
    // The API a grant or an access token is for: {base_url}/<site>.
    resource: model === 'Grant' ? (Object.keys(resources ?? {})[0] ?? null) : text(payload.aud),
  }
}

/** The payload the library wrote, as it gets it back: its id, and when it was used once. */
export function payloadOf(row: OAuthRow, jti: string | undefined): AdapterPayload {
  const payload = JSON.parse(row.payload) as AdapterPayload
  if (jti !== undefined) payload.jti = jti
  if (row.consumedAt) payload.consumed = Math.floor(row.consumedAt.getTime() / 1000)
  return payload
}

export function recordAdapter(store: OAuthStore, now: () => number) {
  return class RecordAdapter implements Adapter {
    readonly model: string

    constructor(model: string) {
      this.model = model
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn = this.defaultExpiry(payload)) {
      const { jti: _jti, ...stored } = payload
      await store.upsert({
        model: this.model,
        id: fingerprint(id),
        payload: JSON.stringify(stored),
        ...recordColumns(this.model, id, payload),
        expiresAt: expiresIn ? new Date(now() + expiresIn * 1000 + (this.model === 'AccessToken' ? EXPIRED_TOKEN_KEPT_MS : 0)) : null,
      })
    }

    /**
     * A self-registered application (no `service_site`, which only an administrator sets) lives a
     * day unless an authorization of it completes (keepClient); the library gives clients no expiry.
     */
    defaultExpiry(payload: AdapterPayload): number | undefined {
      return this.model === 'Client' && payload.service_site === undefined ? UNUSED_CLIENT_TTL_S : undefined
    }

    async find(id: string) {
      const row = await store.find(this.model, fingerprint(id))
      return row && payloadOf(row, id)
    }

    async findByUid(uid: string) {
      const row = await store.findBy(this.model, 'uid', uid)
      return row && payloadOf(row, undefined)
    }

    async findByUserCode(userCode: string) {
      const row = await store.findBy(this.model, 'userCode', userCode)
      return row && payloadOf(row, undefined)
    }

    async consume(id: string) {
      await store.consume(this.model, fingerprint(id))
    }

    async destroy(id: string) {
      await store.destroy(this.model, fingerprint(id))
    }

    async revokeByGrantId(grantId: string) {
      await store.destroyGrant(grantId)
    }
  }
}

/** An application whose authorization completed: kept until it is removed, rather than for a day. */
export async function keepClient(store: OAuthStore, clientId: string): Promise<void> {
  const row = await store.find('Client', fingerprint(clientId))
  if (!row || row.expiresAt === null) return
  const { createdAt: _created, lastUsedAt: _used, consumedAt: _consumed, ...kept } = row
  await store.upsert({ ...kept, expiresAt: null })
}

/**
 * Ends the OAuth grants a person gave, on one site's API or on every site's, with their access and
 * refresh tokens; returns how many. A person taken off the staff or disabled must consent again.
 */
export async function endGrants(store: OAuthStore, userId: number, permalink?: string): Promise<number> {
  const grants = await store.list('Grant', { accountId: String(userId) })
  // A resource is {base_url}/<site>, and the base URL has no path.
  const ending = grants.filter((grant) => permalink === undefined || grant.resource?.endsWith(`/${permalink}`))
  for (const grant of ending) await store.destroyGrant(grant.grantId!)
  return ending.length
}

/**
 * Whether the library may send errors to the application's redirect URI without a page of ours
 * first: an application an administrator registered, or one whose authorization completed.
 */
export async function clientTrusted(store: OAuthStore, clientId: string): Promise<boolean> {
  return (await store.find('Client', fingerprint(clientId)))?.expiresAt === null
}

/**
 * What the API's authentication asks of the authorization server about an access token
 * (plugins/auth/checks/oauth-token.ts): the token as issued, and the note that its grant was used.
 * The records' models and keys stay in this plugin.
 */
export function accessTokenAccess(store: OAuthStore, clock: Clock) {
  return {
    lookup: accessTokenReader(store),
    /** The grant's last use, now (written at most once a minute: db/stores/oauth.ts). */
    recordUse: (grantId: string) => store.recordUse('Grant', fingerprint(grantId), new Date(clock())),
  }
}

/**
 * An access token as the API's authentication checks it: read from the same records, undefined
 * when unknown or when its grant is gone (revoked from the page, by the library after a reused
 * code or refresh token, or expired).
 */
export function accessTokenReader(store: OAuthStore) {
  return async (value: string) => {
    const row = await store.find('AccessToken', fingerprint(value))
    if (!row) return undefined
    const payload = JSON.parse(row.payload) as AdapterPayload
    const { grantId, accountId, aud, scope, exp } = payload
    if (typeof grantId !== 'string' || typeof accountId !== 'string' || typeof aud !== 'string' || typeof exp !== 'number') return undefined
    if (!(await store.find('Grant', fingerprint(grantId)))) return undefined
    return {
      accountId: Number(accountId),
      grantId,
      audience: aud,
      scopes: new Set(typeof scope === 'string' ? scope.split(' ') : []),
      expiresAt: new Date(exp * 1000),
    }
  }
}
