import type { FastifyReply, FastifyRequest } from 'fastify'
import type { NewSecurityEvent, SecurityKind } from '../../db/stores/security-log.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { NOTES_ONLY_MESSAGE } from '../../plugins/auth/notes-only.ts'
import { emailKey } from '../../db/stores/users.ts'
import { MAX_SECOND_STEP_FAILURES } from '../../db/stores/second-factors.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { holdsNul } from '../../lib/nul.ts'
import { grouped } from '../../lib/numbers.ts'
import { MAX_BODY } from '../api/discussions/schemas.ts'

// What every page template receives, and the checks pages share.

/** A whole number from 1, of at most `digits` digits, from a query, form or path field; undefined for anything else. */
export function wholeNumber(value: unknown, digits: number): number | undefined {
  return typeof value === 'string' && value.length <= digits && /^[1-9]\d*$/.test(value) ? Number(value) : undefined
}

/** What is wrong with the text of a message from a form, as the page says it (the API's rule, routes/api/discussions/schemas.ts), or null. */
export function messageProblem(text: string): string | null {
  if (!/\S/.test(text)) return 'Write a message first.'
  if (text.length > MAX_BODY) return `A message holds at most ${grouped(MAX_BODY)} characters.`
  if (holdsNul(text)) return 'The message holds the character U+0000 (NUL), which cannot be saved. Remove it and send it again.'
  return null
}

/**
 * Runs a page's change of a discussion: null when it was made, or the store's refusal that a page
 * answers (the discussion changed meanwhile: conflict; more files than a message carries:
 * too_large; and the `also` codes the page answers too).
 */
const ANSWERED: Array<StoreError['code']> = ['conflict', 'too_large']

export async function refusalOf(work: () => Promise<unknown>, also: Array<StoreError['code']> = []): Promise<StoreError | null> {
  try {
    await work()
    return null
  } catch (error) {
    if (!(error instanceof StoreError) || ![...ANSWERED, ...also].includes(error.code)) throw error
    return error
  }
}

/** A query string of the parameters that have a value (`?a=1&b=2`), or '' when none has. */
export function queryString(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(name, String(value))
  return search.size > 0 ? `?${search}` : ''
}

export function pageData(request: FastifyRequest, reply: FastifyReply, extra: Record<string, unknown> = {}) {
  const { site, user } = request.web
  const base = request.server.urls.siteWeb(site.permalink)
  return { site, user, base, csrf: reply.csrfToken(request), ...extra }
}

/**
 * Writes an event of the security log for what a person did on this site's pages: their account
 * (the signed-in user unless another is named), the site, the client address.
 */
export function logPageEvent(request: FastifyRequest, kind: SecurityKind, detail?: NewSecurityEvent['detail'], userId: number | null = request.web.user!.id) {
  return request.server.securityLog.append({ userId, siteId: request.web.site.id, kind, address: request.ip, actor: 'page', detail })
}

/** Where a signed-out visitor of this page is sent: the sign-in page, which brings them back. */
export function signInRedirect(request: FastifyRequest, reply: FastifyReply) {
  const base = request.server.urls.siteWeb(request.web.site.permalink)
  const next = new URL(request.url, 'http://x').pathname
  return reply.redirect(`${base}/login?next=${encodeURIComponent(next)}`, 303)
}

/** The 404 page of something a page names that is not there: what, why, and the way back (a path under the site's pages). */
export function notFoundPage(request: FastifyRequest, reply: FastifyReply, words: { title: string; message: string; back: { path: string; label: string } }) {
  const href = `${request.server.urls.siteWeb(request.web.site.permalink)}${words.back.path}`
  return reply.page('not_found', pageData(request, reply, { ...words, back: { href, label: words.back.label } }), 404)
}

/** The 403 page of a page that is not for the signed-in person: for whom it is, and what to do. */
export function forbiddenPage(request: FastifyRequest, reply: FastifyReply, words: { title: string; message: string; hint: string }) {
  return reply.page('forbidden', pageData(request, reply, words), 403)
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A staff page's form about the person's own account (name, password, tokens, second factors): a collaborator's too. */
    ownAccount?: boolean
  }
}

/**
 * preHandler of pages for the site's support staff: a signed-out visitor is sent to sign in, a
 * signed-in customer is told why not. A collaborator (docs/decisions.md, "Collaborators") reads
 * every such page, and of their forms sends only those of their own account (`ownAccount`) and
 * internal notes (`notesOnly`, as the API's routes say it; plugins/auth/notes-only.ts).
 */
export async function requireSupporter(request: FastifyRequest, reply: FastifyReply) {
  const { user } = request.web
  if (!user) return signInRedirect(request, reply)
  if (!isStaffRole(user.role)) {
    return forbiddenPage(request, reply, {
      title: 'Support staff only',
      message: `This page is for the support staff of ${request.web.site.name}.`,
      hint: 'If you should be, ask an administrator of this site to add you to its support staff.',
    })
  }
  const { ownAccount, notesOnly } = request.routeOptions.config
  if (user.collaborator && request.method !== 'GET' && request.method !== 'HEAD' && !ownAccount && !notesOnly?.(request.body)) {
    return forbiddenPage(request, reply, {
      title: 'Notes only',
      message: NOTES_ONLY_MESSAGE,
      hint: 'Write an internal note for the supporters, or ask an administrator of this site for another role.',
    })
  }
}

/**
 * preHandler of the administration pages (docs/decisions.md, "Site administrators"): a signed-out
 * visitor is sent to sign in; anyone signed in who is not an administrator of this site gets 403,
 * whatever the page or its form. A fresh sign-in asked before these actions goes after this one.
 */
export async function requireAdministrator(request: FastifyRequest, reply: FastifyReply) {
  const { user } = request.web
  if (!user) return signInRedirect(request, reply)
  if (!user.administrator) {
    return forbiddenPage(request, reply, {
      title: 'Administrators only',
      message: `This page is for the administrators of ${request.web.site.name}.`,
      hint: 'The operator of this help desk makes administrators, with service-desk staff admin.',
    })
  }
}

/** A `next` address is followed only when it stays on this site's pages (no open redirect). */
export function safeNext(next: unknown, sitePath: string): string | null {
  if (typeof next !== 'string' || !next.startsWith(`${sitePath}/`)) return null
  // Printable ASCII only (anything else cannot go in a Location header), no backslash, no empty or
  // dot segments, plain or encoded.
  if (!/^[\x21-\x7E]+$/.test(next) || /\\|\/\/|\/\.\.?(\/|$)|%2e/i.test(next)) return null
  return next
}

/**
 * A multipass `to` is followed only inside this site's pages: an absolute address under the site
 * URL, or a path under its path. Anything else (another host, another site, a scheme trick) is not.
 */
export function safeTo(to: unknown, siteUrl: string): string | null {
  if (typeof to !== 'string' || to === '') return null
  let target: URL
  const site = new URL(siteUrl)
  try {
    target = new URL(to, site)
  } catch {
    return null
  }
  if (target.origin !== site.origin) return null
  const path = safeNext(target.pathname, site.pathname)
  return path === null ? null : `${site.origin}${path}${target.search}`
}

/**
 * A mail to the signed-in person (or the one named) about their account's security, when mail is
 * set up; a failure is logged and the action stands. Never holds a secret.
 */
export async function tellPerson(request: FastifyRequest, to: string, subject: string, lines: string[]) {
  const { mail, log } = request.server
  if (!mail.enabled) return
  const text = [...lines, '', `If this was not you, sign in at ${request.server.urls.siteWeb(request.web.site.permalink)}/login, look at your security log, and tell the people who run this help desk.`].join('\n')
  await mail.send({ to, subject, text }).catch((error: unknown) => log.warn({ err: { message: (error as Error).message } }, 'could not mail a security notice'))
}

const minutes = (seconds: number) => {
  const n = Math.ceil(seconds / 60)
  return `${n} minute${n === 1 ? '' : 's'}`
}

/** What a form says past a failure budget. */
export const tooMany = (seconds: number) => `Too many failed attempts. Try again in ${minutes(seconds)}.`

/** What the second step answers once the account's codes stopped (MAX_SECOND_STEP_FAILURES). */
const CODES_LOCKED = { kind: 'codes_locked' } as const

export const codesLockedMessage = () =>
  `Codes are stopped for this account after ${MAX_SECOND_STEP_FAILURES} wrong ones in a row. Use a passkey if the account has one, or ask the people who run this help desk to unlock it.`

/**
 * A check of an account's second factor (a code, a recovery code, a passkey), within the address's
 * budget and a budget of the account's second step, with the account limit and window: a right
 * password clears the account's password failures, and must not clear its wrong codes too. A
 * truthy result is a success. Codes can be guessed, so they also count in a row, kept in the
 * database: past MAX_SECOND_STEP_FAILURES they stop for good (NIST SP 800-63B 5.2.2) until a
 * passkey, or an operator, proves the person; the first stop is written to the security log.
 */
export async function secondStepAttempt<R>(request: FastifyRequest, user: { id: number; email: string }, code: boolean, check: () => Promise<R>) {
  const { authLimits, secondFactors } = request.server
  if (code && (await secondFactors.failedCodes(user.id)) >= MAX_SECOND_STEP_FAILURES) return CODES_LOCKED
  const result = await authLimits.attempt({ address: request.ip, account: `second step ${emailKey(user.email)}` }, check, (used) => (used ? 'succeeded' : 'failed'))
  if (result !== null && typeof result === 'object' && 'kind' in result) return result
  if (result) await secondFactors.clearFailedCodes(user.id)
  else if (code && (await secondFactors.failCode(user.id)) === MAX_SECOND_STEP_FAILURES) {
    await logPageEvent(request, 'lockout', { second_factor: `codes stopped after ${MAX_SECOND_STEP_FAILURES} wrong ones in a row` }, user.id)
  }
  return result
}

/**
 * A sign-in at a provider under way, kept in a cookie of this browser sealed with the server key
 * (`HttpOnly`, `SameSite=Lax` so it comes back with the provider's redirect, on `path`): put when
 * the browser is sent there, taken once when it comes back (cleared at once, whatever it holds).
 * The mailboxes' OAuth (routes/web/admin-mail.ts) and the staff's sign-in at the company's provider
 * (routes/web/company-sign-in.ts) keep theirs so.
 */
export function sealedOnceCookie<T>(name: string, path: (request: FastifyRequest) => string) {
  const options = (request: FastifyRequest) => {
    const at = path(request)
    return { path: new URL(at).pathname, httpOnly: true, sameSite: 'lax', secure: at.startsWith('https:') } as const
  }
  return {
    put(request: FastifyRequest, reply: FastifyReply, value: T, ms: number): void {
      reply.setCookie(name, request.server.secretBox.seal(JSON.stringify(value)), { ...options(request), maxAge: ms / 1000 })
    },
    take(request: FastifyRequest, reply: FastifyReply): T | null {
      const raw = request.cookies[name]
      const plain = raw === undefined ? null : request.server.secretBox.open(raw)
      reply.clearCookie(name, options(request))
      return plain === null ? null : (JSON.parse(plain) as T)
    },
  }
}
