import { ratingLink } from '../../lib/rating-link.ts'
import { randomBytes } from 'node:crypto'
import fp from 'fastify-plugin'
import { mailOf, WAITING, type OutboxMail, type OutboxRow } from '../../db/stores/outbox.ts'
import { fileBytes } from '../../db/stores/files.ts'
import { DEFAULT_MAIL_ATTACH_BYTES, shownSize } from '../../lib/files.ts'
import { failureWords } from '../../lib/imap.ts'
import { notificationMessageId, replyAddress } from '../../lib/reply-address.ts'
import { createMailer, type Mail, type Mailer } from '../../lib/mailer.ts'
import { repeatInBackground } from '../background.ts'
import { SignInUnavailable } from './oauth.ts'

// The sender of the outbox (docs/decisions.md, "Mail"): every few seconds, by whichever process
// runs, it takes the due rows under a lease; a webhook's goes to plugins/webhooks/delivery.ts, a
// mail it sends itself. Each mail row is taken under a lease (so two processes never send one row at
// once, and a process that dies mid-send lets it go when the lease ends), sends each through the
// SMTP address of the mailbox it leaves from, or the service's mailer (SERVICE_SMTP_URL) when the
// mailbox has none, and records the try: sent; or tried again later, with a backoff; or failed for
// good when the server refused it permanently (5xx) or after MAX_TRIES. A row with no way out
// (no SMTP address at all) waits, queued. A reply's mail carries the reply's files, read at each
// try, when they add up to at most `attachBytes` (SERVICE_MAIL_ATTACHMENTS_MB); past it, the mail
// names each with its link on the customer's side instead.

export const SEND_EVERY_MS = 5_000
/** How long a row is held at a time while it is sent: renewed every third of it while the send is under way. */
export const LEASE_MS = 60_000
export const MAX_TRIES = 8
/** How many due rows are read at a time, how many webhooks are posted at once (and to one endpoint), and how many rows of each kind one run takes at most. */
const BATCH = 20
const PARALLEL = 8
const PER_ENDPOINT = 2
const MAX_ROWS = 1_000
/** The longest a row waits before it is looked at again: six hours. */
const LONGEST_WAIT_MS = 6 * 60 * 60 * 1000
/** The wait before try n+1: a minute, doubling, at most six hours. */
export const backoffMs = (tries: number) => Math.min(60_000 * 2 ** (tries - 1), LONGEST_WAIT_MS)

/**
 * How long a row with no way out (no SMTP address at all) waits before it is looked at again,
 * `waited` after it was queued: as long again, at least a minute and at most six hours. A backlog
 * that has no way out then costs a few looks a day, not one a minute each (a site without SMTP
 * queues its staff's notices for good); what waited is due at once when a way out comes
 * (db/stores/outbox.ts, wakeWaiting). A mailbox that cannot sign in may mend by itself (its
 * provider answers again): its rows are looked at again every minute, as before.
 */
export const waitMs = (waited: number) => Math.min(Math.max(waited, backoffMs(1)), LONGEST_WAIT_MS)

/** What a row waits for when neither its mailbox nor the service has an SMTP address. */
export const NO_WAY_OUT = `${WAITING}neither the mailbox nor the service (SERVICE_SMTP_URL) has an SMTP address to send it by`

declare module 'fastify' {
  interface FastifyInstance {
    /** Sends what is due now (the background loop runs it; tests call it). */
    sendOutbox(): Promise<number>
    /** The most a reply's files may add up to and go attached (SERVICE_MAIL_ATTACHMENTS_MB); past it, as links. */
    mailAttachBytes: number
  }
}

/** An SMTP server's own words for a refusal (lib/imap.ts), and whether it is for good (a 5xx reply). */
function failureOf(error: unknown): { words: string; permanent: boolean } {
  const { responseCode } = error as { responseCode?: number }
  return { words: failureWords(error), permanent: typeof responseCode === 'number' && responseCode >= 500 }
}

export default fp<{ firstAfterMs?: number; everyMs?: number; send?: boolean; leaseMs?: number; attachBytes?: number }>(
  async (fastify, { firstAfterMs = SEND_EVERY_MS, everyMs = SEND_EVERY_MS, send = true, leaseMs = LEASE_MS, attachBytes = DEFAULT_MAIL_ATTACH_BYTES }) => {
    const { outbox, mail, mailboxes, secretBox, urls, files } = fastify
    // A mailer per mailbox SMTP address, made on first use and kept (by its sealed value: a
    // mailbox added again with another address gets a new one).
    const mailers = new Map<string, Mailer>()
    fastify.addHook('onClose', async () => mailers.forEach((mailer) => mailer.close()))

    // Connected mailboxes whose access token the SMTP server refused: renewed before the next send.
    const refusedTokens = new Set<number>()
    // Connected mailboxes found unable to sign in during this run: their other rows wait without asking again.
    let unavailable = new Map<number, SignInUnavailable>()

    /**
     * The mailer a mail leaves by: its mailbox's SMTP server, or the service's. A connected
     * mailbox's is made for the send with its access token of the moment (`once`: closed after
     * it); SignInUnavailable when it has none.
     */
    async function mailerOf(mailboxId: number | undefined): Promise<{ mailer: Mailer; once?: boolean; oauthOf?: number }> {
      const mailbox = mailboxId === undefined ? undefined : await mailboxes.byId(mailboxId)
      const smtpUrl = mailbox && (await mailboxes.smtpOf(mailbox))
      if (!smtpUrl) return { mailer: mail }
      if (mailbox.oauthProvider) {
        const known = unavailable.get(mailbox.id)
        if (known) throw known
        const oauth = await fastify.mailOAuth.access(mailbox, refusedTokens.delete(mailbox.id)).catch((error: unknown) => {
          if (error instanceof SignInUnavailable) unavailable.set(mailbox.id, error)
          throw error
        })
        return { mailer: await createMailer({ smtpUrl, from: mailbox.address, oauth }), once: true, oauthOf: mailbox.id }
      }
      let mailer = mailers.get(mailbox.smtp!)
      if (!mailer) mailers.set(mailbox.smtp!, (mailer = await createMailer({ smtpUrl, from: mailbox.address })))
      return { mailer }
    }

    /**
     * The text with the discussion's page below it, when it names one (the customer's side, or the
     * staff's for a notification); a mail to a supporter that can be answered gets their reply
     * address as its Reply-To and a Message-ID an answer threads by (lib/reply-address.ts).
     */
    const withPage = <M extends OutboxMail>({ page, mailboxId: _mailbox, answerable, ...message }: M, rating: string | null = null) => {
      if (!page) return message
      if (!page.staff) {
        const web = `Read and answer it on the web: ${urls.siteWeb(page.site)}/help/${page.number}`
        if (!rating) return { ...message, text: `${message.text}\n\n-- \n${web}` }
        return { ...message, text: `${message.text}\n\n-- \nHow did we do? Rate this answer:\nGood: ${rating}?rating=good\nNot good: ${rating}?rating=not_good\n\n${web}` }
      }
      const footer = `Open it: ${urls.siteWeb(page.site)}/discussions/${page.number}\nWhat you are mailed about is chosen on your profile: ${urls.siteWeb(page.site)}/profile`
      if (!answerable) return { ...message, text: `${message.text}\n\n-- \n${footer}` }
      const byMail = 'Answer this mail to reply to the customer; start your answer with #note to add an internal note instead.'
      return {
        ...message,
        replyTo: replyAddress(secretBox.digest, answerable),
        messageId: notificationMessageId(secretBox.digest, answerable.siteId, answerable.number, answerable.mailbox, randomBytes(6).toString('hex')),
        text: `${message.text}\n\n-- \n${byMail}\n${footer}`,
      }
    }

    /**
     * The mail of a row with the files of its reply: attached when they add up to at most
     * attachBytes, else named with their links on the customer's side, above the page's. Not the
     * message a mail came as (it is the team's, and the customer's own).
     */
    async function withFiles(row: OutboxRow, message: OutboxMail): Promise<OutboxMail & Pick<Mail, 'attachments'>> {
      // A reply's row names its reply, and its mail the discussion's page (db/stores/outbox.ts, queueReplyMail).
      if (row.kind !== 'reply_mail') return message
      const attached = (await files.ofComment(row.commentId!)).filter((file) => !file.originalMessage)
      if (attached.length === 0) return message
      const total = attached.reduce((sum, file) => sum + file.size, 0)
      if (total <= attachBytes) {
        const attachments = []
        for (const file of attached) {
          const pieces: Buffer[] = []
          for await (const piece of fileBytes(files, file.fileId)) pieces.push(piece)
          attachments.push({ filename: file.name, content: Buffer.concat(pieces), contentType: file.contentType })
        }
        return { ...message, attachments }
      }
      const where = `${urls.siteWeb(message.page!.site)}/help/files/`
      const lines = attached.map((file) => `- ${file.name} (${shownSize(file.size)}): ${where}${file.id}`)
      const why = `The files of this answer add up to ${shownSize(total)}, more than a mail of ours carries (${shownSize(attachBytes)}); they are on the web:`
      return { ...message, text: `${message.text}\n\n${why}\n${lines.join('\n')}` }
    }

    /** When a row with no way out is looked at again (waitMs). */
    const waitingUntil = (row: OutboxRow) => {
      const now = fastify.clock()
      return new Date(now + waitMs(now - row.createdAt.getTime()))
    }

    /** Sends one mail row of the outbox under its lease; whether it was sent. */
    async function sendMail(row: OutboxRow): Promise<boolean> {
      const message = mailOf(row, secretBox)
      if (!message) {
        // Sealed under another server key (the key was changed since): it can never be read.
        await outbox.tried(row.id, 'sealed under another server key: it cannot be read', null)
        return false
      }
      let way: Awaited<ReturnType<typeof mailerOf>>
      try {
        way = await mailerOf(message.mailboxId)
      } catch (error) {
        if (!(error instanceof SignInUnavailable)) throw error
        // A connected mailbox that cannot sign in: the mail waits until it can (connected again).
        await outbox.postpone(row.id, `${WAITING}${error.message}`, new Date(fastify.clock() + backoffMs(1)))
        return false
      }
      const { mailer } = way
      if (!mailer.enabled) {
        // Looked at again in a while, so the rows behind it are not held up.
        await outbox.postpone(row.id, NO_WAY_OUT, waitingUntil(row))
        return false
      }
      try {
        return await sendClaimed(row, message, mailer, way.oauthOf)
      } finally {
        if (way.once) mailer.close()
      }
    }

    /**
     * The rating link (lib/rating-link.ts) a reply's mail carries when it leaves while its
     * discussion is resolved ("Send and resolve", or resolved before the mail went) and the site
     * asks for ratings (docs/decisions.md, "Satisfaction"); null otherwise.
     */
    async function ratingOf(row: OutboxRow, message: OutboxMail): Promise<string | null> {
      if (row.kind !== 'reply_mail' || !message.page || message.page.staff) return null
      const site = await fastify.sites.find(message.page.site)
      if (!site?.satisfactionOn) return null
      const d = await fastify.discussions.get(site.id, message.page.number).catch(() => null)
      return d && ratingLink(secretBox.digest, urls.siteWeb(site.permalink), d, fastify.clock())
    }

    /** Sends one mail row by its mailer under the row's lease; whether it was sent. */
    async function sendClaimed(row: OutboxRow, message: OutboxMail, mailer: Mailer, oauthOf: number | undefined): Promise<boolean> {
      const claimed = await outbox.claim(row.id, leaseMs)
      if (!claimed) return false
      // Sent once: the lease is held while the SMTP server takes its time (a slow server is no
      // reason for another process to send the same row), and the outcome is written only while
      // the lease is still this claim's.
      const held = holdLease(row.id, claimed.leaseUntil!)
      try {
        await mailer.send(withPage(await withFiles(row, message), await ratingOf(row, message)))
        const lease = await held.stop()
        if (lease) await outbox.sent(row.id, lease)
        return lease !== undefined
      } catch (error) {
        const lease = await held.stop()
        const { words, permanent: refused } = failureOf(error)
        // A connected mailbox's token the server refused is renewed, and the mail tried again: the refusal is the sign-in's, not the mail's.
        const signInRefused = oauthOf !== undefined && (error as { code?: string }).code === 'EAUTH'
        if (signInRefused) refusedTokens.add(oauthOf)
        const permanent = refused && !signInRefused
        const tries = row.attempts + 1
        const retryAt = permanent || tries >= MAX_TRIES ? null : new Date(fastify.clock() + backoffMs(tries))
        if (lease) await outbox.tried(row.id, words, retryAt, lease)
        fastify.log.warn({ outbox: { id: row.id, kind: row.kind, tries, permanent, retryAt } }, 'a mail of the outbox was not sent')
        return false
      }
    }

    /** Renews a claim's lease every third of it until stopped: the lease then held, or undefined when it was lost meanwhile. */
    function holdLease(id: number, first: Date) {
      let lease: Date | undefined = first
      let renewing: Promise<unknown> = Promise.resolve()
      const renew = async () => {
        try {
          if (lease) lease = await outbox.renew(id, lease, leaseMs)
        } catch {
          // The database did not answer: the lease is kept as it was, and tried again at the next turn.
        }
      }
      const timer = setInterval(() => (renewing = renewing.then(renew)), leaseMs / 3)
      return {
        async stop() {
          clearInterval(timer)
          await renewing
          return lease
        },
      }
    }

    let closed = false
    fastify.addHook('onClose', async () => {
      closed = true
    })

    // Whether this process has made the rows that waited for a way out due (its first run): a
    // service started with SERVICE_SMTP_URL sends what waited for one at once, not hours later.
    let woken = false

    /** Sends the due mail, one row after another in the order queued, BATCH rows a read, at most MAX_ROWS a run. */
    async function sendMails(): Promise<number> {
      unavailable = new Map()
      if (!woken) {
        if (mail.enabled) await outbox.wake()
        woken = true
      }
      let sent = 0
      for (let read = 0; read < MAX_ROWS / BATCH && !closed; read++) {
        const rows = await outbox.dueMail(BATCH)
        for (const row of rows) if (await sendMail(row)) sent++
        if (rows.length < BATCH) break
      }
      return sent
    }

    /**
     * Posts the due webhooks, PARALLEL at once and PER_ENDPOINT at most to one endpoint, reading
     * more as tries end, at most MAX_ROWS a run: an endpoint that is slow holds up only its own rows.
     */
    async function deliverWebhooks(): Promise<number> {
      let sent = 0
      let taken = 0
      const busy = new Map<number, number>()
      const seen = new Set<number>()
      const inFlight = new Set<Promise<void>>()
      const full = (webhookId: number) => (busy.get(webhookId) ?? 0) >= PER_ENDPOINT
      const start = (row: OutboxRow) => {
        const id = row.webhookId!
        busy.set(id, (busy.get(id) ?? 0) + 1)
        const run: Promise<void> = fastify
          .deliverWebhook(row)
          .then((delivered) => void (delivered && sent++))
          .finally(() => {
            busy.set(id, busy.get(id)! - 1)
            inFlight.delete(run)
          })
        inFlight.add(run)
      }
      while (!closed && taken < MAX_ROWS) {
        const passedOver = [...busy.keys()].filter(full)
        const rows = (await outbox.dueWebhooks(BATCH, passedOver)).filter((row) => !seen.has(row.id))
        const startable = rows.filter((row) => !full(row.webhookId!))
        if (startable.length === 0) {
          // The read passed over the endpoints that were full when it was made: their tries may
          // have ended while it was under way (a loaded database). One that has room now is read
          // again at once, not after another endpoint's slow tries; a read that passed over none,
          // with nothing under way, is the end.
          if (passedOver.some((id) => !full(id))) continue
          if (inFlight.size === 0) break
          await Promise.race(inFlight)
          continue
        }
        for (const row of startable) {
          // Rows of an endpoint that filled up meanwhile come back with the next read.
          if (full(row.webhookId!) || closed) continue
          while (inFlight.size >= PARALLEL) await Promise.race(inFlight)
          seen.add(row.id)
          taken++
          start(row)
        }
      }
      await Promise.all(inFlight)
      return sent
    }

    /** Sends what is due: the mail and the webhooks side by side; how many went. Nothing while they are held here (plugins/mail/home.ts). */
    async function sendOutbox(): Promise<number> {
      if (await fastify.mailHeld()) return 0
      const [mails, hooks] = await Promise.all([sendMails(), deliverWebhooks()])
      await fastify.pruneWebhooks()
      return mails + hooks
    }

    fastify.decorate('sendOutbox', sendOutbox)
    fastify.decorate('mailAttachBytes', attachBytes)
    // SERVICE_OUTBOX_SEND=off: another process sends; this one only queues.
    if (!send) return
    repeatInBackground(fastify, { firstAfterMs, everyMs }, async () => {
      try {
        await sendOutbox()
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not send the outbox')
      }
    })
  },
  { name: 'mail-sender', fastify: '5.x', dependencies: ['mail', 'mail-home', 'mail-oauth', 'discussion-stores', 'webhook-delivery'] },
)
