import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { Mailbox, MailStore } from '../../db/stores/mail.ts'
import type { Clock } from '../../lib/clock.ts'
import { createMailOAuth, refusalWords, renewalDue, revokeConnection, type MailOAuth, type MailTokens } from '../../lib/mail-oauth.ts'

// The access of mailboxes connected with OAuth (docs/decisions.md, "Mailboxes connected with
// OAuth"), for the fetcher (IMAP) and the sender (SMTP), which sign in with XOAUTH2: the mailbox's
// access token, renewed before it ends by one process at a time (a renewal claimed in the
// database; the others wait for its tokens), and the provider's refusal written on the mailbox and
// mailed to its site's administrators once. A refused renewal stops the mailbox until an
// administrator connects it again; the provider unreachable is tried again at the next use.

/** How long one process may take to renew a mailbox's tokens before another may. */
export const RENEWAL_MS = 30_000

/**
 * A token a server refused is renewed at once, unless it is this young: then the refusal is the
 * server's (a shared mailbox the account may not read, SMTP AUTH turned off), and renewing at every
 * look would only wear the provider out.
 */
export const YOUNG_TOKEN_MS = 60_000

/** A renewal that could not be asked still signs in with the token in hand while it has this long left. */
export const STILL_GOOD_MS = 60_000

/** Why a connected mailbox cannot sign in now, in words; `lasting`: until it is connected again. */
export class SignInUnavailable extends Error {
  readonly lasting: boolean
  constructor(message: string, lasting: boolean) {
    super(message)
    this.lasting = lasting
  }
}

/** What a connected mailbox signs in with: its address as the user, and an access token. */
export interface MailAccess {
  user: string
  accessToken: string
  issuedAt: number
  expiresAt: number
}

declare module 'fastify' {
  interface FastifyInstance {
    mailOAuth: {
      protocol: MailOAuth
      /** The access token a connected mailbox signs in with now (renewed when due within `withinMs`, or `force`d after a server refused it); SignInUnavailable when there is none. */
      access(mailbox: Mailbox, force?: boolean, withinMs?: number): Promise<MailAccess>
      /** Revokes a connected mailbox's refresh token at its provider, where the provider offers it (the mailbox is being removed); never throws. */
      revoke(mailbox: Mailbox): Promise<void>
    }
  }
}

/** What the access of connected mailboxes works with: the service's, or a command's. */
export interface AccessDeps {
  mailboxes: MailStore
  protocol: MailOAuth
  clock: Clock
  /** Where a warning goes (the service's log; a command's standard error). */
  warn(what: Record<string, unknown>, message: string): void
  /** The mail page of a site, named in the mail to its administrators. */
  mailPage(permalink: string): string
}

/**
 * The access of connected mailboxes (the plugin's, and `service-desk mailbox test`'s): the access
 * token a mailbox signs in with now, renewed when due (or `force`d after a server refused it) by one
 * process at a time; SignInUnavailable when there is none.
 */
export function mailAccess({ mailboxes, protocol, clock, warn, mailPage }: AccessDeps) {
  /** The provider's refusal of a renewal under `claim`: written on the mailbox, and its administrators mailed once. */
  async function refused(mailbox: Mailbox, claim: Date, words: string): Promise<never> {
    const first = await mailboxes.renewalRefused(mailbox.id, claim, words, (to, about) => ({
      to,
      subject: `The mailbox ${about.address} cannot sign in: connect it again`,
      text: [
        `The mail provider of ${about.address} (a mailbox of ${about.siteName}) refused to renew its access:`,
        '',
        words,
        '',
        'Until it is connected again, no mail is fetched from it and no reply leaves by it; the replies wait in the outbox.',
        `Connect it again on the mail page: ${mailPage(about.permalink)}`,
      ].join('\n'),
      automatic: true,
    }))
    if (first) warn({ mailbox: { id: mailbox.id, address: mailbox.address } }, "the mail provider refused to renew a connected mailbox's access")
    throw new SignInUnavailable(words, true)
  }

  /** Renews the mailbox's tokens under the claim this process holds: the tokens to sign in with. */
  async function renew(mailbox: Mailbox, claim: Date, tokens: MailTokens): Promise<MailTokens> {
    const provider = await mailboxes.provider(mailbox.oauthProvider!)
    if (!provider?.settings) {
      return refused(mailbox, claim, provider ? "the mail provider's application is sealed under another server key: register it again (service-desk mail-provider add), then connect the mailbox again" : `the mail provider ${mailbox.oauthProvider} is no longer registered: register it again (service-desk mail-provider add), then connect the mailbox again`)
    }
    let renewed: MailTokens
    try {
      renewed = await protocol.renew(provider.settings, tokens.refreshToken, clock())
    } catch (error) {
      const words = refusalWords(error, provider.label)
      if (words) return refused(mailbox, claim, words)
      await mailboxes.renewed(mailbox.id, claim, null)
      warn({ mailbox: { id: mailbox.id, address: mailbox.address }, err: { message: (error as Error).message } }, "could not renew a connected mailbox's access: tried again at the next use")
      // The token in hand is still good for a while: signed in with it meanwhile.
      if (tokens.expiresAt - clock() > STILL_GOOD_MS) return tokens
      throw new SignInUnavailable(`${provider.label} could not be asked to renew the mailbox's access (${(error as Error).message}): tried again in a while`, false)
    }
    if (await mailboxes.renewed(mailbox.id, claim, renewed)) return renewed
    // The claim ran out meanwhile (or the mailbox was connected again): the tokens written since are the ones.
    const now = await mailboxes.byId(mailbox.id)
    return (now && (await mailboxes.tokensOf(now))) ?? renewed
  }

  /**
   * The access token to sign in with now, renewed when it is due within `withinMs` (a connection
   * meant to last that long) or `force`d (a server refused it).
   */
  async function access(mailbox: Mailbox, force = false, withinMs = 0): Promise<MailAccess> {
    let current = mailbox
    // Another process's renewal is waited for, a little longer than it may take.
    for (const deadline = Date.now() + RENEWAL_MS + 5_000; ; ) {
      if (current.oauthProblem) throw new SignInUnavailable(current.oauthProblem, true)
      const tokens = await mailboxes.tokensOf(current)
      if (!tokens) throw new SignInUnavailable("the mailbox's tokens are sealed under another server key: connect it again", true)
      const user = (await mailboxes.imapOf(current))?.user ?? current.address
      const signIn = (got: MailTokens): MailAccess => ({ user, accessToken: got.accessToken, issuedAt: got.issuedAt, expiresAt: got.expiresAt })
      // A token a server refused is renewed, unless it is young: then the refusal is the server's.
      if (force && clock() - tokens.issuedAt < YOUNG_TOKEN_MS) force = false
      if (!force && !renewalDue(tokens, clock() + withinMs)) return signIn(tokens)
      const claim = await mailboxes.claimRenewal(current.id, RENEWAL_MS)
      if (claim) {
        // Read again under the claim: another process may have renewed them just before.
        const fresh = (await mailboxes.byId(current.id)) ?? current
        const latest = (await mailboxes.tokensOf(fresh)) ?? tokens
        if (latest.accessToken !== tokens.accessToken && !renewalDue(latest, clock() + withinMs)) {
          await mailboxes.renewed(current.id, claim, null)
          return signIn(latest)
        }
        return signIn(await renew(fresh, claim, latest))
      }
      if (Date.now() > deadline) throw new SignInUnavailable("another process has been renewing the mailbox's access for too long: tried again in a while", false)
      await sleep(200)
      const again = await mailboxes.byId(current.id)
      if (!again) throw new SignInUnavailable('the mailbox was removed', true)
      // Renewed by the other process meanwhile: its tokens, without a renewal of our own.
      if ((await mailboxes.tokensOf(again))?.accessToken !== tokens.accessToken) force = false
      current = again
    }
  }

  return access
}

export default fp<{ protocol?: MailOAuth }>(
  async (fastify, { protocol = createMailOAuth() }) => {
    const { mailboxes, urls } = fastify
    const access = mailAccess({
      mailboxes,
      protocol,
      clock: fastify.clock,
      warn: (what, message) => fastify.log.warn(what, message),
      mailPage: (permalink) => `${urls.siteWeb(permalink)}/admin/mail`,
    })

    async function revoke(mailbox: Mailbox): Promise<void> {
      const provider = mailbox.oauthProvider === null ? undefined : await mailboxes.provider(mailbox.oauthProvider)
      const words = await revokeConnection(protocol, provider, await mailboxes.tokensOf(mailbox))
      fastify.log.info({ mailbox: { address: mailbox.address } }, `a connected mailbox was removed: ${words}`)
    }

    fastify.decorate('mailOAuth', { protocol, access, revoke })
  },
  { name: 'mail-oauth', fastify: '5.x', dependencies: ['discussion-stores'] },
)
