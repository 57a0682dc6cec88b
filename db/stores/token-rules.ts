import { and, gt, isNull, lte, type Column, type SQL } from '../drizzle.ts'
import type { Tables } from '../port.ts'
import type { Access, Role } from '../values.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { fingerprint, lastFour } from '../../lib/token-format.ts'
import { StoreError } from './errors.ts'
import { isStaffRole } from './staff.ts'

// The rules of personal tokens (docs/decisions.md, "Personal API tokens" and "Token lifecycle"),
// apart from the store that keeps them (db/stores/tokens.ts): what a new token may be, when a
// use is worth writing, which expiry notices are due.

export const EXPIRY_DAYS = [7, 30, 90, 365] as const
export const DEFAULT_EXPIRY_DAYS = 90
export const MAX_ACTIVE_TOKENS = 20
export const MAX_TOKEN_NAME = 100
// last used is written at most this often per token (docs/decisions.md).
export const LAST_USED_EVERY_MS = 60_000
// The addresses a token was last used from, kept per token (docs/decisions.md, "Token lifecycle").
export const ADDRESSES_KEPT = 5

export type PersonalToken = Tables['personalTokens']['$inferSelect']

/** What the look-up knows of a token's last use: enough to tell whether this use is news. */
export interface LastUse {
  id: number
  lastUsedAt: Date | null
  lastUsedFrom: string | null
}

/** A use from an address, and when it was last used from there. */
export interface TokenAddress {
  address: string
  lastUsedAt: Date
}

/**
 * Whether a use must be written: the first, the first for a minute (LAST_USED_EVERY_MS), or one
 * from another address than the last; anything else is written by nobody, so a busy token costs
 * one write a minute, and an address that changes is never missed for long.
 */
export function useIsNews(token: LastUse, from: string, now: number): boolean {
  return !token.lastUsedAt || now - token.lastUsedAt.getTime() >= LAST_USED_EVERY_MS || token.lastUsedFrom !== from
}

/** One use waiting for the batch: the token, the address it came from, and when (the latest from there). */
export interface QueuedUse {
  id: number
  from: string
  at: number
}

/** A use's place in a queue: one per token and address. */
export const useKey = (id: number, from: string): string => `${id} ${from}`

/**
 * The uses waiting for the next batch, per token and address: a token used from two addresses
 * before the batch is written has both written (and both logged when new), not only the first.
 */
export class UseQueue {
  readonly #uses = new Map<string, QueuedUse>()

  /** Notes a use; a later use of the same token from the same address only moves its time. */
  add(id: number, from: string, at: number): void {
    this.#uses.set(useKey(id, from), { id, from, at })
  }

  /** Empties the queue into a batch, oldest use first, so a token's last write is its latest use. */
  take(): QueuedUse[] {
    const batch = [...this.#uses.values()].sort((a, b) => a.at - b.at)
    this.#uses.clear()
    return batch
  }
}

/** What the security log says of a first use from an address (not among the token's last five). */
export function newAddressEvent(token: { id: number; userId: number; siteId: number; name: string }, address: string) {
  return { userId: token.userId, siteId: token.siteId, kind: 'token_new_address' as const, address, actor: 'api', detail: { token_id: token.id, name: token.name } }
}

/**
 * The expiry notices (docs/decisions.md, "Token lifecycle"): one mail 7 days before a token dies,
 * and one on its last day. A notice is claimed (its column set) by one statement before its mail
 * goes, so of several processes exactly one sends it; a failed mail gives the claim back.
 */
export const NOTICE_DAYS = { week: 7, day: 1 } as const
export type NoticeKind = keyof typeof NOTICE_DAYS

/** A claimed notice: the token (never its value), its owner and its site. */
export interface ExpiryNotice {
  tokenId: number
  name: string
  access: Access
  createdAt: Date
  expiresAt: Date
  email: string
  userName: string
  disabled: boolean
  staff: boolean
  permalink: string
  siteName: string
}

type NoticeColumns = Record<'revokedAt' | 'expiresAt' | 'weekNoticeAt' | 'dayNoticeAt', Column>

/**
 * The tokens whose `kind` notice is due at `now`: live, not yet noticed, dying within the window;
 * the week's notice only while more than a day is left (then the day's is due instead).
 */
export function noticeDue(tokens: NoticeColumns, kind: NoticeKind, now: number): SQL | undefined {
  return and(
    isNull(tokens.revokedAt),
    isNull(kind === 'week' ? tokens.weekNoticeAt : tokens.dayNoticeAt),
    gt(tokens.expiresAt, new Date(now)),
    lte(tokens.expiresAt, new Date(now + NOTICE_DAYS[kind] * DAY_MS)),
    kind === 'week' ? gt(tokens.expiresAt, new Date(now + NOTICE_DAYS.day * DAY_MS)) : undefined,
  )
}

/** The column a notice sets when claimed. */
export const noticeColumn = (kind: NoticeKind) => (kind === 'week' ? 'weekNoticeAt' : 'dayNoticeAt')

/**
 * Whether a claimed notice is worth a mail: not to a disabled account or one off the staff (the
 * token is unusable anyway), and no week's notice for a token made to last 7 days or less (its
 * owner chose that moment a few minutes ago; the day's notice still comes).
 */
export function noticeWorthSending(notice: ExpiryNotice, kind: NoticeKind): boolean {
  if (notice.disabled || !notice.staff) return false
  return kind === 'day' || notice.expiresAt.getTime() - notice.createdAt.getTime() > NOTICE_DAYS.week * DAY_MS
}

/** Addresses grouped by token, most recent first. */
export function addressesByToken(rows: Array<TokenAddress & { tokenId: number }>): Map<number, TokenAddress[]> {
  const byToken = new Map<number, TokenAddress[]>()
  for (const { tokenId, address, lastUsedAt } of rows) {
    const list = byToken.get(tokenId) ?? []
    list.push({ address, lastUsedAt })
    byToken.set(tokenId, list)
  }
  return byToken
}

export interface NewToken {
  siteId: number
  userId: number
  name: string
  access: Access
  expiresInDays: number
}

/** A token as the list shows it, with what makes it unusable while it is still active. */
export type ListedToken = PersonalToken & { email: string; disabled: boolean; staff: boolean }

export function tokenState(token: ListedToken, now: number): 'active' | 'unusable' | 'expired' | 'revoked' {
  if (token.revokedAt) return 'revoked'
  if (token.expiresAt.getTime() <= now) return 'expired'
  if (token.disabled || !token.staff) return 'unusable'
  return 'active'
}

/** The input with its name trimmed, or a StoreError. */
export function validateNewToken(input: NewToken): NewToken {
  const name = input.name.trim()
  if (name === '') throw new StoreError('a token needs a name that says what it is for', 'invalid', 'name')
  if (name.length > MAX_TOKEN_NAME) {
    throw new StoreError(`a token name must be at most ${MAX_TOKEN_NAME} characters`, 'invalid', 'name')
  }
  if (holdsNul(name)) throw new StoreError('a token name must not contain the character U+0000', 'invalid', 'name')
  if (input.access !== 'read' && input.access !== 'write') {
    throw new StoreError('access must be read (Read only) or write (Read and write)', 'invalid', 'access')
  }
  // Which lifetimes a site allows is its token policy's (db/stores/site-policy.ts), checked with it.
  if (!Number.isInteger(input.expiresInDays) || input.expiresInDays < 1 || input.expiresInDays > EXPIRY_DAYS[EXPIRY_DAYS.length - 1]) {
    throw new StoreError(`expiry must be ${EXPIRY_DAYS.join(', ')} days`, 'invalid', 'expires')
  }
  return { ...input, name }
}

/** A StoreError unless the owner (undefined: no such user) may create a token on the site. */
export function checkTokenOwner(owner: { role: Role | null; disabled: boolean } | undefined): void {
  if (!owner) throw new StoreError('there is no such user', 'not_found', 'email')
  if (!isStaffRole(owner.role)) throw new StoreError('only support staff of this site can create tokens', 'forbidden')
  if (owner.disabled) throw new StoreError('a disabled account cannot create tokens', 'forbidden')
}

/** A StoreError when the owner's active tokens leave no room for another. */
export function checkActiveTokens(active: number): void {
  if (active >= MAX_ACTIVE_TOKENS) {
    throw new StoreError(
      `you already have ${MAX_ACTIVE_TOKENS} active tokens, the most allowed; revoke one you no longer use first`,
      'limit',
    )
  }
}

/** The row of a new token with this value; nothing is written. */
export function newTokenRow(input: NewToken, value: string, now: number) {
  return {
    siteId: input.siteId,
    userId: input.userId,
    name: input.name,
    access: input.access,
    fingerprint: fingerprint(value),
    lastFour: lastFour(value),
    createdAt: new Date(now),
    expiresAt: new Date(now + input.expiresInDays * DAY_MS),
  }
}

export function noSuchToken(id: number): StoreError {
  return new StoreError(`there is no token ${id} on this site`, 'not_found', 'id')
}

export function tokenAlreadyRevoked(id: number): StoreError {
  return new StoreError(`token ${id} is already revoked`, 'conflict', 'id')
}
