import { checkImap, checkSmtp, failureWords } from '../lib/imap.ts'
import { OPERATOR } from '../db/stores/audit.ts'
import { normalAddress, parseImapUrl, shownImap, shownSmtp } from '../lib/mail.ts'
import { shown } from '../lib/terminal-text.ts'
import { createMailOAuth, revokeConnection } from '../lib/mail-oauth.ts'
import { mailAccess, SignInUnavailable, type MailAccess } from '../plugins/mail/oauth.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// The sites' mailboxes on the command line (docs/decisions.md, "Mail"): the addresses a site takes
// mail at, how it arrives (an IMAP mailbox, or the built-in receiver, SERVICE_MAIL_RECEIVER) and
// how replies leave (the mailbox's SMTP address, or the service's); `test` signs in to both.

export const mailboxCommands: Command[] = [
  admin(
    {
      words: ['mailbox', 'add'],
      args: ['<site>', '<address>'],
      options: {
        category: { type: 'string', value: 'ID', about: "the category its mail opens discussions in; by default the site's first by creation (General on a site `site add` made)" },
        imap: { type: 'string', value: 'URL', about: 'fetch its mail from this IMAP mailbox, imaps://user:password@imap.example.com/INBOX (the password is sealed, never shown again)' },
        smtp: { type: 'string', value: 'URL', about: "send its replies through this SMTP server, smtp://user:password@smtp.example.com:587; the service's SERVICE_SMTP_URL by default" },
        acknowledge: { type: 'boolean', about: 'answer each new discussion by mail with an automatic acknowledgement' },
      },
      usage: 'mailbox add <site> <address> [--category ID] [--imap URL] [--smtp URL] [--acknowledge]',
      summary: "Take the site's mail at an address: mail to it opens discussions, and answers to them join theirs.",
    },
    async ({ sites, mailboxes }, [permalink, address], values, io) => {
      const site = await sites.get(permalink)
      const category = values.category === undefined ? null : Number(values.category)
      if (category !== null && !/^[1-9]\d{0,9}$/.test(String(values.category))) throw new UsageError(`--category must be a category id, not "${values.category}"`)
      const imap = values.imap === undefined ? null : parseImapUrl(String(values.imap))
      if (typeof imap === 'string') throw new UsageError(`--imap ${imap}`)
      const mailbox = await mailboxes.addMailbox(site.id, address, { categoryId: category, imap, smtpUrl: values.smtp === undefined ? null : String(values.smtp), acknowledge: values.acknowledge === true }, OPERATOR)
      const arrives = imap ? `mail is fetched from ${shownImap(imap)} by the running service` : 'mail reaches it through the receiver (SERVICE_MAIL_RECEIVER) once the address\'s mail is sent there'
      io.stdout(`mailbox ${mailbox.address} added to ${site.permalink}${mailbox.categoryId === null ? '' : ` (category ${mailbox.categoryId})`}; ${arrives}\n`)
      if (imap && !imap.secure) io.stderr('service-desk: warning: imap:// signs in over plain text unless the server offers STARTTLS; use imaps:// where the server has it\n')
    },
  ),
  admin(
    {
      words: ['mailbox', 'list'],
      args: ['<site>'],
      usage: 'mailbox list <site>',
      summary: 'One line per mailbox of the site: its address, its category, how mail arrives, the last fetch, the last error, and how it signs in when connected with OAuth (the provider, and connected or why the provider refused).',
      atomic: false,
    },
    async ({ sites, mailboxes }, [permalink], _values, io) => {
      const site = await sites.get(permalink)
      for (const mailbox of await mailboxes.listMailboxes(site.id)) {
        const imap = await mailboxes.imapOf(mailbox)
        const oauth = mailbox.oauthProvider === null ? '-' : `${mailbox.oauthProvider}: ${mailbox.oauthProblem === null ? 'connected' : `refused: ${mailbox.oauthProblem}`}`
        const fields = [mailbox.address, mailbox.categoryId ?? 'first category', imap ? shownImap(imap) : 'receiver', mailbox.lastFetchAt?.toISOString() ?? '-', mailbox.lastError ?? '-', oauth]
        io.stdout(`${fields.map((field) => shown(String(field))).join('\t')}\n`)
      }
    },
  ),
  admin(
    {
      words: ['mailbox', 'test'],
      args: ['<site>', '<address>'],
      usage: 'mailbox test <site> <address>',
      summary: 'Sign in to the IMAP mailbox and the SMTP server of a mailbox and say what they answered (a connected mailbox with its token, renewed when due); nothing is fetched or sent.',
      atomic: false,
    },
    async ({ sites, mailboxes, urls }, [permalink, address], _values, io) => {
      const site = await sites.get(permalink)
      const mailbox = await mailboxes.mailbox(address)
      if (mailbox?.siteId !== site.id) throw new UsageError(`${site.permalink} has no mailbox ${address}`)
      const imap = await mailboxes.imapOf(mailbox)
      const smtp = await mailboxes.smtpOf(mailbox)
      const failed: string[] = []
      // A connected mailbox signs in with its access token, renewed here when due as the service would.
      let access: MailAccess | undefined
      if (mailbox.oauthProvider !== null) {
        const renewing = mailAccess({ mailboxes, protocol: createMailOAuth(), clock: io.clock, warn: (_what, message) => io.stderr(`service-desk: warning: ${message}\n`), mailPage: (site) => `${urls.siteWeb(site)}/admin/mail` })
        try {
          access = await renewing(mailbox)
          io.stdout(`OAuth ${mailbox.oauthProvider}: signs in as ${shown(access.user)} with a token good until ${new Date(access.expiresAt).toISOString()}\n`)
        } catch (error) {
          if (!(error instanceof SignInUnavailable)) throw error
          throw new UsageError(`OAuth ${mailbox.oauthProvider}: ${shown(error.message)}`)
        }
      }
      const checks: Array<[string, () => Promise<string>]> = [
        [imap ? `IMAP ${shownImap(imap)}` : 'IMAP', async () => (imap ? checkImap(imap, access) : 'no IMAP mailbox: its mail reaches the built-in receiver (SERVICE_MAIL_RECEIVER)')],
        [smtp ? `SMTP ${shownSmtp(smtp)}` : 'SMTP', async () => (smtp ? checkSmtp(smtp, access) : "no SMTP address of its own: its replies leave by the service's (SERVICE_SMTP_URL)")],
      ]
      for (const [what, check] of checks) {
        try {
          io.stdout(`${shown(await check())}\n`)
        } catch (error) {
          failed.push(`${what}: ${failureWords(error)}`)
        }
      }
      if (failed.length > 0) throw new UsageError(failed.map(shown).join('; '))
    },
  ),
  admin(
    {
      words: ['mailbox', 'remove'],
      args: ['<site>', '<address>'],
      usage: 'mailbox remove <site> <address>',
      summary: "Stop taking mail at the address; the discussions its mail made stay. A connected mailbox's token is revoked at its provider, where the provider offers it.",
      // One statement, committed before a connected mailbox's token is revoked at its provider (the network holds no lock).
      atomic: false,
    },
    async ({ sites, mailboxes }, [permalink, address], _values, io) => {
      const site = await sites.get(permalink)
      const mailbox = await mailboxes.mailbox(address)
      if (mailbox?.siteId !== site.id || !(await mailboxes.removeMailbox(site.id, address, OPERATOR))) throw new UsageError(`${site.permalink} has no mailbox ${address}`)
      io.stdout(`mailbox ${normalAddress(address)} removed from ${site.permalink}\n`)
      if (mailbox.oauthProvider !== null) io.stdout(`${shown(await revokeConnection(createMailOAuth(), await mailboxes.provider(mailbox.oauthProvider), await mailboxes.tokensOf(mailbox)))}\n`)
    },
  ),
  // Where mail and webhooks are at home (plugins/mail/home.ts): a copy holds them until resumed.
  admin(
    {
      words: ['mail', 'status'],
      args: [],
      usage: 'mail status',
      summary: 'Whether this database fetches mail and sends mail and webhooks, or holds them and why (a restored or copied database holds them); it changes nothing.',
      atomic: false,
    },
    async ({ engine, mailboxes }, _args, _values, io) => {
      // Read only: run where the service does not (a bind mount's other path, say), it holds nothing.
      const held = await mailboxes.heldAt(await engine.place())
      io.stdout(held ? `held: ${held}\n` : 'mail and webhooks go from this database\n')
    },
  ),
  admin(
    {
      words: ['mail', 'resume'],
      args: [],
      usage: 'mail resume',
      summary: 'Fetch mail and send mail and webhooks from this database (after a restore or a copy has held them), in every running process within seconds.',
    },
    async ({ engine, mailboxes }, _args, _values, io) => {
      await mailboxes.setHome(await engine.place(), null)
      io.stdout('mail and webhooks go from this database: fetched and sent within seconds by the running service\n')
    },
  ),
  admin(
    {
      words: ['mail', 'hold'],
      args: [],
      options: { reason: { type: 'string', value: 'TEXT', about: 'why, as the mail page and `mail status` say it' } },
      usage: 'mail hold [--reason TEXT]',
      summary: 'Stop fetching mail and sending mail and webhooks from this database (what is queued waits) until `mail resume`.',
    },
    async ({ engine, mailboxes }, _args, values, io) => {
      const reason = String(values.reason ?? '').trim().slice(0, 300) || 'held by an operator (service-desk mail hold)'
      await mailboxes.setHome(await engine.place(), reason)
      io.stdout(`held: ${reason}\n`)
    },
  ),
]
