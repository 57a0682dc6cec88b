import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { Mailbox } from '../../db/stores/mail.ts'
import { createMailOAuth, refusalWords, renewalDue, revokeConnection, type MailOAuth, type MailTokens } from '../../lib/mail-oauth.ts'

// The access of mailboxes connected with OAuth (docs/decisions.md, "Mailboxes connected with
// OAuth"), for the fetcher (IMAP) and the sender (SMTP), which sign in with XOAUTH2: the mailbox's
// access token, renewed before it ends by one process at a time (a renewal claimed in the
// database; the others wait for its tokens), and the provider's refusal written on the mailbox and
// mailed to its site's administrators once. A refused renewal stops the mailbox until an
// administrator connects it again; the provider unreachable is tried again at the next use.

/** How long one process may take to renew a mailbox's tokens before another may. */
export const RENEWAL_MS = 30_000

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
      /** The access token a connected mailbox signs in with now (renewed when due, or `force`d after a server refused it); SignInUnavailable when there is none. */
      access(mailbox: Mailbox, force?: boolean): Promise<MailAccess>
      /** Revokes a connected mailbox's refresh token at its provider, where the provider offers it (the mailbox is being removed); never throws. */
      revoke(mailbox: Mailbox): Promise<void>
    }
  }
}

export default fp<{ protocol?: MailOAuth }>(
  async (fastify, { protocol = createMailOAuth() }) => {
    const { mailboxes, urls } = fastify

    /** The provider's refusal of a renewal: written on the mailbox, and its administrators mailed once. */
    async function refused(mailbox: Mailbox, words: string): Promise<never> {
      const first = await mailboxes.renewalRefused(mailbox.id, words, (to, about) => ({
        to,
        subject: `The mailbox ${about.address} cannot sign in: connect it again`,
        text: [
          `The mail provider of ${about.address} (a mailbox of ${about.siteName}) refused to renew its access:`,
          '',
          words,
          '',
          'Until it is connected again, no mail is fetched from it and no reply leaves by it; the replies wait in the outbox.',
          `Connect it again on the mail page: ${urls.siteWeb(about.permalink)}/admin/mail`,
        ].join('\n'),
        automatic: true,
      }))
      if (first) fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address } }, 'the mail provider refused to renew a connected mailbox\'s access')
      throw new SignInUnavailable(words, true)
    }

    /** Renews the mailbox's tokens under the claim this process holds: the new tokens. */
    async function renew(mailbox: Mailbox, tokens: MailTokens): Promise<MailTokens> {
      const provider = await mailboxes.provider(mailbox.oauthProvider!)
      if (!provider?.settings) {
        await mailboxes.renewed(mailbox.id, null)
        return refused(mailbox, provider ? 'the mail provider\'s application is sealed under another server key: register it again (service-desk mail-provider add), then connect the mailbox again' : `the mail provider ${mailbox.oauthProvider} is no longer registered: register it again (service-desk mail-provider add), then connect the mailbox again`)
      }
      try {
        const renewed = await protocol.renew(provider.settings, tokens.refreshToken, fastify.clock())
        await mailboxes.renewed(mailbox.id, renewed)
        return renewed
      } catch (error) {
        await mailboxes.renewed(mailbox.id, null)
        const words = refusalWords(error, provider.label)
        if (words) return refused(mailbox, words)
        fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address }, err: { message: (error as Error).message } }, 'could not renew a connected mailbox\'s access: tried again at the next use')
        throw new SignInUnavailable(`${provider.label} could not be asked to renew the mailbox's access (${(error as Error).message}): tried again in a while`, false)
      }
    }

    async function access(mailbox: Mailbox, force = false): Promise<MailAccess> {
      let current = mailbox
      // Another process's renewal is waited for, a little longer than it may take.
      for (const deadline = Date.now() + RENEWAL_MS + 5_000; ; ) {
        if (current.oauthProblem) throw new SignInUnavailable(current.oauthProblem, true)
        const tokens = (await mailboxes.tokensOf(current))
        if (!tokens) throw new SignInUnavailable('the mailbox\'s tokens are sealed under another server key: connect it again', true)
        const user = (await mailboxes.imapOf(current))?.user ?? current.address
        if (!force && !renewalDue(tokens, fastify.clock())) return { user, accessToken: tokens.accessToken, issuedAt: tokens.issuedAt, expiresAt: tokens.expiresAt }
        if (await mailboxes.claimRenewal(current.id, RENEWAL_MS)) {
          // Read again under the claim: another process may have renewed them just before.
          const fresh = (await mailboxes.byId(current.id)) ?? current
          const latest = (await mailboxes.tokensOf(fresh)) ?? tokens
          let renewed = latest
          if (latest.accessToken !== tokens.accessToken && !renewalDue(latest, fastify.clock())) await mailboxes.renewed(current.id, null)
          else renewed = await renew(fresh, latest)
          return { user, accessToken: renewed.accessToken, issuedAt: renewed.issuedAt, expiresAt: renewed.expiresAt }
        }
        if (Date.now() > deadline) throw new SignInUnavailable('another process has been renewing the mailbox\'s access for too long: tried again in a while', false)
        await sleep(200)
        const again = await mailboxes.byId(current.id)
        if (!again) throw new SignInUnavailable('the mailbox was removed', true)
        // Renewed by the other process meanwhile: its tokens, without a renewal of our own.
        if ((await mailboxes.tokensOf(again))?.accessToken !== tokens.accessToken) force = false
        current = again
      }
    }

    async function revoke(mailbox: Mailbox): Promise<void> {
      const provider = mailbox.oauthProvider === null ? undefined : await mailboxes.provider(mailbox.oauthProvider)
      const words = await revokeConnection(protocol, provider, await mailboxes.tokensOf(mailbox))
      fastify.log.info({ mailbox: { address: mailbox.address } }, `a connected mailbox was removed: ${words}`)
    }

    fastify.decorate('mailOAuth', { protocol, access, revoke })
  },
  { name: 'mail-oauth', fastify: '5.x', dependencies: ['discussion-stores'] },
)
