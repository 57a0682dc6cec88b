import { and, eq, gt, inArray, isNull, or } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { fingerprint } from '../../lib/token-format.ts'
import { RECENTLY_ENDED_DAYS, type InventoryEntry } from './inventory-rules.ts'
import { createOAuthStore } from './oauth.ts'
import { isStaffRole, membershipOn, staffColumn, STAFF_ROLE } from './staff.ts'
import { tokenState } from './token-rules.ts'

// A site's credentials inventory (docs/decisions.md, "Site administrators"), one store for both
// engines (db/port.ts): every active and recently ended credential that reaches the site's API,
// gathered from where each kind lives: personal tokens, the OAuth grants for the site, and the
// legacy tokens of its staff. A site has its staff's tokens, a few hundred at most: read whole,
// then filtered, sorted and paged by db/stores/inventory-rules.ts, the same for every door.

/** What an OAuth grant's payload holds that the inventory shows. */
interface GrantPayload {
  clientId: string
  accountId: string
  resources?: Record<string, string>
}

export function createCredentialInventory(port: StorePort, clock: Clock) {
  const { db, tables: { memberships, personalTokens, users } } = port
  const oauth = createOAuthStore(port, clock)

  async function personalTokensOf(siteId: number, now: number): Promise<InventoryEntry[]> {
    const endedSince = new Date(now - RECENTLY_ENDED_DAYS * DAY_MS)
    const rows = await db
      .select({ token: personalTokens, email: users.email, userName: users.name, disabled: users.disabled, staff: staffColumn(memberships) })
      .from(personalTokens)
      .innerJoin(users, eq(users.id, personalTokens.userId))
      .leftJoin(memberships, membershipOn(memberships, personalTokens.siteId, personalTokens.userId))
      .where(
        and(
          eq(personalTokens.siteId, siteId),
          or(gt(personalTokens.revokedAt, endedSince), and(isNull(personalTokens.revokedAt), gt(personalTokens.expiresAt, endedSince))),
        ),
      )
    return rows.map(({ token, email, userName, disabled, staff }) => ({
      id: `pat-${token.id}`,
      kind: 'personal_token' as const,
      ownerId: token.userId,
      owner: email,
      ownerName: userName,
      name: token.name,
      access: token.access,
      createdAt: token.createdAt,
      lastUsedAt: token.lastUsedAt,
      lastUsedFrom: token.lastUsedFrom,
      expiresAt: token.expiresAt,
      state: tokenState({ ...token, email, disabled, staff }, now),
      revocable: true,
    }))
  }

  /** The applications' grants for the site's API (`resource`): live ones only, a revoked grant is gone. */
  async function grantsOf(resource: string): Promise<InventoryEntry[]> {
    const grants = await oauth.list('Grant', { resource })
    if (grants.length === 0) return []
    const payloads = grants.map((row) => JSON.parse(row.payload) as GrantPayload)
    const owners = await db
      .select({ id: users.id, email: users.email, name: users.name, disabled: users.disabled })
      .from(users)
      .where(inArray(users.id, [...new Set(payloads.map((grant) => Number(grant.accountId)))]))
    const byId = new Map(owners.map((owner) => [owner.id, owner]))
    const entries: InventoryEntry[] = []
    for (const [i, row] of grants.entries()) {
      const grant = payloads[i]
      // An account is never deleted, so every grant's owner is there.
      const owner = byId.get(Number(grant.accountId))!
      const client = await oauth.find('Client', fingerprint(grant.clientId))
      const name = client ? ((JSON.parse(client.payload) as { client_name?: string }).client_name ?? grant.clientId) : grant.clientId
      entries.push({
        id: `oauth-${row.grantId!}`,
        kind: 'oauth',
        ownerId: owner.id,
        owner: owner.email,
        ownerName: owner.name,
        name,
        // Listed by this resource, so the grant names it.
        access: grant.resources![resource].split(' ').includes('write') ? 'write' : 'read',
        createdAt: row.createdAt,
        lastUsedAt: row.lastUsedAt,
        lastUsedFrom: null,
        expiresAt: row.expiresAt,
        state: owner.disabled ? 'unusable' : 'active',
        revocable: true,
      })
    }
    return entries
  }

  /** The legacy tokens of the site's staff: the account's one token, which works on every site it is staff of. */
  async function legacyTokensOf(siteId: number, now: number): Promise<InventoryEntry[]> {
    const rows = await db
      .select({ id: users.id, email: users.email, name: users.name, disabled: users.disabled, expiresAt: users.legacyTokenExpiresAt, role: memberships.role })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.siteId, siteId), eq(memberships.role, STAFF_ROLE)))
    return rows
      .filter((row) => row.expiresAt !== null && isStaffRole(row.role) && row.expiresAt.getTime() > now - RECENTLY_ENDED_DAYS * DAY_MS)
      .map((row) => ({
        id: `legacy-${row.id}`,
        kind: 'legacy_token' as const,
        ownerId: row.id,
        owner: row.email,
        ownerName: row.name,
        name: 'Legacy token',
        access: 'write' as const,
        // Issued a year before it expires (docs/decisions.md, "Legacy account token").
        createdAt: new Date(row.expiresAt!.getTime() - 365 * DAY_MS),
        lastUsedAt: null,
        lastUsedFrom: null,
        expiresAt: row.expiresAt,
        state: row.expiresAt!.getTime() <= now ? ('expired' as const) : row.disabled ? ('unusable' as const) : ('active' as const),
        revocable: false,
      }))
  }

  return {
    /** Every credential of the site, unsorted; `resource` is the site's API address, which OAuth grants name. */
    async list(siteId: number, resource: string): Promise<InventoryEntry[]> {
      const now = clock()
      return [...(await personalTokensOf(siteId, now)), ...(await grantsOf(resource)), ...(await legacyTokensOf(siteId, now))]
    },
  }
}

export type CredentialInventory = ReturnType<typeof createCredentialInventory>
