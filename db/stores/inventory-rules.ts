import type { Access } from '../values.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { StoreError } from './errors.ts'

// The rules of a site's credentials inventory (docs/decisions.md, "Site administrators"), apart
// from the store that gathers it (db/stores/credential-inventory.ts): what one entry is, and how
// the page, the API and the command line filter, sort and page the same list.

export const credentialKinds = ['personal_token', 'oauth', 'legacy_token'] as const
export type CredentialKind = (typeof credentialKinds)[number]
export type CredentialState = 'active' | 'unusable' | 'expired' | 'revoked'

/** Credentials that ended this long ago or less are still listed (revoked, expired). */
export const RECENTLY_ENDED_DAYS = 30
export const INVENTORY_PAGE_SIZE = 50
/** The most credentials one revocation names. */
export const MAX_REVOKED_AT_ONCE = 100
export const MAX_REASON = 500

export interface InventoryEntry {
  /** `pat-<id>`, `oauth-<grant>`, `legacy-<user id>`: unique across kinds, what a revocation names. */
  id: string
  kind: CredentialKind
  ownerId: number
  owner: string
  ownerName: string
  /** The token's name, the application's, or "Legacy token". */
  name: string
  access: Access
  createdAt: Date
  lastUsedAt: Date | null
  lastUsedFrom: string | null
  expiresAt: Date | null
  state: CredentialState
  /** Whether an administrator of the site may revoke it here: a legacy token is the account's, on every site. */
  revocable: boolean
}

export const sortColumns = ['owner', 'kind', 'name', 'access', 'created', 'last_used', 'expires', 'state'] as const
export type SortColumn = (typeof sortColumns)[number]

export interface InventoryFilter {
  owner?: string
  kind?: CredentialKind
  access?: Access
  /** Not used for at least this many days (never used counts). */
  unusedDays?: number
  /** Active and ending within this many days. */
  expiresWithinDays?: number
  sort?: SortColumn
  descending?: boolean
  page?: number
}

const SORT_KEYS: Record<SortColumn, (entry: InventoryEntry) => string | number> = {
  owner: (e) => e.owner.toLowerCase(),
  kind: (e) => e.kind,
  name: (e) => e.name.toLowerCase(),
  access: (e) => e.access,
  created: (e) => e.createdAt.getTime(),
  last_used: (e) => e.lastUsedAt?.getTime() ?? 0,
  expires: (e) => e.expiresAt?.getTime() ?? Number.MAX_SAFE_INTEGER,
  state: (e) => e.state,
}

/** Whether the entry passes every filter given. */
export function matches(entry: InventoryEntry, filter: InventoryFilter, now: number): boolean {
  if (filter.owner && !entry.owner.toLowerCase().includes(filter.owner.trim().toLowerCase())) return false
  if (filter.kind && entry.kind !== filter.kind) return false
  if (filter.access && entry.access !== filter.access) return false
  if (filter.unusedDays !== undefined && entry.lastUsedAt && entry.lastUsedAt.getTime() > now - filter.unusedDays * DAY_MS) return false
  if (filter.expiresWithinDays !== undefined) {
    if (entry.state !== 'active' || !entry.expiresAt || entry.expiresAt.getTime() > now + filter.expiresWithinDays * DAY_MS) return false
  }
  return true
}

/**
 * One page of the entries that pass the filter, sorted by the column asked (newest created first
 * by default; ties by id, so a page is stable), and how many passed.
 */
export function inventoryPage(
  entries: InventoryEntry[],
  filter: InventoryFilter,
  now: number,
  perPage = INVENTORY_PAGE_SIZE,
): { total: number; page: number; pages: number; entries: InventoryEntry[] } {
  const passed = entries.filter((entry) => matches(entry, filter, now))
  const column = filter.sort ?? 'created'
  const descending = filter.descending ?? filter.sort === undefined
  const key = SORT_KEYS[column]
  passed.sort((a, b) => {
    const [x, y] = [key(a), key(b)]
    const order = x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
    return descending ? -order : order
  })
  const pages = Math.max(1, Math.ceil(passed.length / perPage))
  const page = Math.min(Math.max(1, filter.page ?? 1), pages)
  return { total: passed.length, page, pages, entries: passed.slice((page - 1) * perPage, page * perPage) }
}

/** The reason of a revocation, trimmed, or a StoreError: every administrative revocation says why. */
export function checkReason(reason: string): string {
  const trimmed = reason.trim()
  if (trimmed === '') throw new StoreError('say why: the owner is told the reason', 'invalid', 'reason')
  if (trimmed.length > MAX_REASON) throw new StoreError(`keep the reason to ${MAX_REASON} characters`, 'invalid', 'reason')
  if (trimmed.includes('\u0000')) throw new StoreError('a reason must not contain the character U+0000', 'invalid', 'reason')
  return trimmed
}

/**
 * The entries a revocation names, each an active, revocable credential of this inventory, or a
 * StoreError for the first that is not: nothing is revoked unless all of them can be.
 */
export function revocationTargets(entries: InventoryEntry[], ids: string[]): InventoryEntry[] {
  const unique = [...new Set(ids)]
  if (unique.length === 0) throw new StoreError('choose at least one credential to revoke', 'invalid', 'ids')
  if (unique.length > MAX_REVOKED_AT_ONCE) throw new StoreError(`revoke at most ${MAX_REVOKED_AT_ONCE} credentials at once`, 'invalid', 'ids')
  const byId = new Map(entries.map((entry) => [entry.id, entry]))
  return unique.map((id) => {
    const entry = byId.get(id)
    if (!entry) throw new StoreError(`there is no credential ${id} on this site`, 'not_found', 'ids')
    if (!entry.revocable) {
      throw new StoreError(`${id} is a legacy token, which belongs to the account on every site: switch legacy tokens off in the token policy instead`, 'invalid', 'ids')
    }
    if (entry.state === 'revoked' || entry.state === 'expired') throw new StoreError(`${id} has already ended (${entry.state})`, 'conflict', 'ids')
    return entry
  })
}

/** A whole number of days from 0 to 3650 given as a number or digits, or undefined. */
function days(value: unknown): number | undefined {
  const text = typeof value === 'number' ? String(value) : value
  return typeof text === 'string' && /^\d{1,4}$/.test(text) && Number(text) <= 3650 ? Number(text) : undefined
}

const oneOf = <T extends string>(values: readonly T[], value: unknown): T | undefined =>
  typeof value === 'string' && (values as readonly string[]).includes(value) ? (value as T) : undefined

/**
 * The filter that query parameters (the page's form, the API's query, the command's options, by
 * the API's names) ask for; a value that is not one is left out, as an empty field is.
 */
export function filterFromParams(params: Record<string, unknown>): InventoryFilter {
  const owner = typeof params.owner === 'string' && params.owner.trim() !== '' ? params.owner.trim().slice(0, 254) : undefined
  const page = days(params.page)
  return {
    owner,
    kind: oneOf(credentialKinds, params.kind),
    access: oneOf(['read', 'write'] as const, params.access),
    unusedDays: days(params.unused_days),
    expiresWithinDays: days(params.expires_within_days),
    sort: oneOf(sortColumns, params.sort),
    descending: params.direction === 'desc' ? true : params.direction === 'asc' ? false : undefined,
    page: page === undefined || page < 1 ? undefined : page,
  }
}
