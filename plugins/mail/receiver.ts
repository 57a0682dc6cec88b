import fp from 'fastify-plugin'
import type { DNSResolver } from 'mailauth'
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server'
import type { FileLimits } from '../../lib/files.ts'
import type { Outcome } from './pipeline.ts'

// The built-in receiver (docs/decisions.md, "Mail"): an SMTP server on a port of its own, off by
// default, for a team that points an MX record or a forward at the service. It takes mail for the
// sites' mailbox addresses only (never a relay: any other recipient is refused in SMTP), refuses a
// message over MAX_MESSAGE_BYTES in SMTP, offers STARTTLS where a certificate is set, and hands each message to the one pipeline
// (plugins/mail/pipeline.ts). What the pipeline cannot do now (the database unreachable) is a
// temporary failure, so the sending server tries again.

/** SERVICE_MAIL_RECEIVER: where the receiver listens; unset, there is none. */
export interface ReceiverSettings {
  host: string
  port: number
  /** The largest message taken (MAX_MESSAGE_BYTES; smaller in tests). */
  maxBytes?: number
  /** A certificate and its key (PEM): STARTTLS is offered with them; without, no TLS. */
  tls?: { cert: Buffer; key: Buffer }
  /** The DNS answers SPF, DKIM and DMARC are checked with (the system's resolver; a map of its own in tests). */
  resolver?: DNSResolver
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The built-in receiver's port once it listens (0 until then, and without one). */
    mailReceiver: { port: number }
  }
}

// A function, as the MCP server's loader is: the compiled build rewrites this import's extension.
const loadPipeline = () => import('./pipeline.ts')

/** An SMTP refusal: its reply code and its words (RFC 5321; enhanced status codes of RFC 3463). */
function refusal(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code })
}

export default fp<{ settings?: ReceiverSettings; limits: FileLimits }>(
  async (fastify, { settings, limits }) => {
    fastify.decorate('mailReceiver', { port: 0 })
    if (!settings) return
    // Loaded only where mail is taken in (docs/decisions.md, "Loaded on first use"): smtp-server,
    // mailauth and mailparser are some megabytes that most processes never need.
    const [{ SMTPServer }, { authenticate }, { MAX_MESSAGE_BYTES, takeMessage, pipelineOf }] = await Promise.all([import('smtp-server'), import('mailauth'), loadPipeline()])
    const maxBytes = settings.maxBytes ?? MAX_MESSAGE_BYTES
    const { mailboxes } = fastify
    const serverName = new URL(fastify.config.baseUrl).hostname
    const pipeline = pipelineOf(fastify, limits)

    /**
     * DMARC's verdict on the sender (mailauth: SPF of the connecting address, DKIM, alignment with
     * the From): true pass, false fail, null when the domain publishes no policy or DNS could not
     * say (the message is taken either way, and a fail is shown, never hidden).
     */
    async function senderVerdict(raw: Buffer, session: SMTPServerSession): Promise<boolean | null> {
      try {
        const { dmarc } = await authenticate(raw, {
          ip: session.remoteAddress,
          helo: session.hostNameAppearsAs,
          sender: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          mta: serverName,
          resolver: settings!.resolver,
          disableArc: true,
          disableBimi: true,
        })
        const result = dmarc ? dmarc.status.result : 'none'
        return result === 'pass' ? true : result === 'fail' ? false : null
      } catch (error) {
        fastify.log.warn({ err: error }, 'mail receiver: the sender could not be checked')
        return null
      }
    }

    /** Takes the message for each site it is addressed to (a site once, whatever its addresses among them). */
    async function deliver(raw: Buffer, session: SMTPServerSession): Promise<Outcome[]> {
      const verified = await senderVerdict(raw, session)
      const sites = new Set<number>()
      const outcomes: Outcome[] = []
      for (const recipient of session.envelope.rcptTo) {
        const mailbox = await mailboxes.mailbox(recipient.address)
        if (!mailbox || sites.has(mailbox.siteId)) continue
        sites.add(mailbox.siteId)
        const outcome = await takeMessage(pipeline, mailbox, raw, verified)
        fastify.log.info({ mail: { door: 'receiver', site: mailbox.siteId, ...outcome } }, 'mail taken in')
        outcomes.push(outcome)
      }
      return outcomes
    }

    const server = new SMTPServer({
      name: serverName,
      banner: 'Service Desk',
      size: maxBytes,
      // An MX takes mail from anyone, without authentication; STARTTLS with a certificate only.
      authOptional: true,
      disabledCommands: settings.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      ...(settings.tls && { cert: settings.tls.cert, key: settings.tls.key }),
      logger: false,
      onRcptTo(address, _session, callback) {
        mailboxes.mailbox(address.address).then(
          (mailbox) => callback(mailbox ? undefined : refusal(550, `5.1.1 <${address.address}>: no mailbox of this help desk`)),
          (error: unknown) => {
            fastify.log.warn({ err: error }, 'mail receiver: could not look up a recipient')
            callback(refusal(451, '4.3.0 The help desk cannot take mail just now: try again later'))
          },
        )
      },
      onData(stream: SMTPServerDataStream, session, callback) {
        const chunks: Buffer[] = []
        let size = 0
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size <= maxBytes) chunks.push(chunk)
        })
        stream.on('end', () => {
          if (stream.sizeExceeded) return callback(refusal(552, `5.3.4 The message is larger than ${Math.round(maxBytes / (1024 * 1024))} MB`))
          deliver(Buffer.concat(chunks), session).then(
            (outcomes) => {
              // A refusal is the message's own (no sender): the same for every site it went to. A
              // sender past its limit is asked to send it again later.
              const refused = outcomes.find((o) => o.kind === 'refused') as { reason: string } | undefined
              const later = outcomes.find((o) => o.kind === 'later') as { reason: string } | undefined
              callback(refused ? refusal(550, `5.6.0 ${refused.reason}`) : later ? refusal(451, `4.7.0 ${later.reason}: try again later`) : null, 'Message taken')
            },
            (error: unknown) => {
              fastify.log.error({ err: error }, 'mail receiver: a message could not be taken')
              callback(refusal(451, '4.3.0 The help desk cannot take mail just now: try again later'))
            },
          )
        })
      },
    })
    server.on('error', (error: Error) => fastify.log.warn({ err: error }, 'mail receiver error'))

    fastify.addHook('onReady', async () => {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(settings.port, settings.host, () => {
          server.off('error', reject)
          resolve()
        })
      })
      fastify.mailReceiver.port = (server.server.address() as { port: number }).port
      fastify.log.info({ mailReceiver: { host: settings.host, port: fastify.mailReceiver.port } }, 'mail receiver listening')
    })
    fastify.addHook('onClose', async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })
  },
  { name: 'mail-receiver', fastify: '5.x', dependencies: ['config', 'discussion-stores', 'server-key'] },
)
