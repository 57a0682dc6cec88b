import fp from 'fastify-plugin'
import { shownMoment } from '../lib/clock.ts'
import { noticeWorthSending, type ExpiryNotice, type NoticeKind } from '../db/stores/token-rules.ts'
import { repeatInBackground } from './background.ts'

// Expiry notices by mail (issue 18; docs/decisions.md, "Token lifecycle"): when mail is set up
// (plugins/mail.ts), the owner of a personal token gets one mail 7 days before it expires and one on its last
// day. Every hour, each process claims the notices that are due (the store's one-statement claim,
// so exactly one process sends each), sends them, and gives back the claim of a mail that failed.
// A mail names the token, its site and its expiry, and links to the page where a new one is made;
// it never holds the token's value (which nothing stores anyway).

declare module 'fastify' {
  interface FastifyInstance {
    expiryNotices: { sendDue(): Promise<number> }
  }
}

export const NOTICES_EVERY_MS = 60 * 60_000
const KINDS: NoticeKind[] = ['day', 'week']

/** The mail of one notice: subject and plain text. */
export function noticeMail(notice: ExpiryNotice, kind: NoticeKind, tokensPage: string) {
  const when = shownMoment(notice.expiresAt)
  const access = notice.access === 'write' ? 'Read and write' : 'Read only'
  const subject =
    kind === 'day'
      ? `Your API token "${notice.name}" on ${notice.siteName} expires within a day`
      : `Your API token "${notice.name}" on ${notice.siteName} expires on ${when.slice(0, 10)}`
  const text = [
    `Hello ${notice.userName || notice.email},`,
    '',
    `your personal API token "${notice.name}" (${access}) on ${notice.siteName} expires on ${when}.`,
    'From then on, every request made with it is refused with 401 (the token expired).',
    '',
    'If a script or an integration still uses it, make a new token and put it in its place:',
    tokensPage,
    '',
    'If nothing uses it any more, there is nothing to do: it stops working by itself.',
    '',
    '(You get one mail 7 days before a token expires and one on its last day.)',
  ].join('\n')
  return { subject, text }
}

export default fp(
  async (fastify) => {
    const { tokens, urls, log, mail } = fastify

    /** Sends the notices due now; answers how many mails went. None while mail is held here (plugins/mail/home.ts): they wait, unclaimed. */
    async function sendDue(): Promise<number> {
      if (!mail.enabled || (await fastify.mailHeld())) return 0
      let sent = 0
      for (const kind of KINDS) {
        for (const notice of await tokens.claimExpiryNotices(kind)) {
          if (!noticeWorthSending(notice, kind)) continue
          const { subject, text } = noticeMail(notice, kind, urls.apiTokensPage(notice.permalink))
          try {
            await mail.send({ to: notice.email, subject, text })
            sent++
            log.info({ token_id: notice.tokenId, notice: kind }, 'token expiry notice sent')
          } catch (error) {
            log.warn({ token_id: notice.tokenId, notice: kind, err: { message: (error as Error).message } }, 'could not send a token expiry notice; trying again in an hour')
            await tokens.releaseExpiryNotice(kind, notice.tokenId)
          }
        }
      }
      return sent
    }

    fastify.decorate('expiryNotices', { sendDue })
    if (!mail.enabled) return
    repeatInBackground(fastify, { firstAfterMs: 0, everyMs: NOTICES_EVERY_MS }, async () => {
      await sendDue().catch((error: unknown) => log.warn({ err: error }, 'could not look for token expiry notices'))
    })
  },
  { name: 'expiry-notices', fastify: '5.x', dependencies: ['config', 'token-store', 'mail', 'mail-home'] },
)
