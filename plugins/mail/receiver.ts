import fp from 'fastify-plugin'
import type { DNSResolver } from 'mailauth'
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server'
import { addressBlock } from '../../lib/address-block.ts'
import type { FileLimits } from '../../lib/files.ts'
import { createAttemptLimiter } from '../auth/attempt-limiter.ts'
import type { Outcome, SenderCheck, SpamSettings } from './pipeline.ts'

// The built-in receiver (docs/decisions.md, "Mail"): an SMTP server on a port of its own, off by
// default, for a team that points an MX record or a forward at the service. It takes mail for the
// sites' mailbox addresses only (never a relay: any other recipient is refused in SMTP), refuses a
// message over MAX_MESSAGE_BYTES in SMTP, offers STARTTLS where a certificate is set, and hands each message to the one pipeline
// (plugins/mail/pipeline.ts). What the pipeline cannot do now (the database unreachable) is a
// temporary failure, so the sending server tries again.

/**
 * Limits a sender cannot write (a From is the sender's to choose; the connecting address is not):
 * connections open at once, in all and from one address (its block), past which `421`; messages a
 * minute from one connecting address, and to one mailbox, past which `451 4.7.0` (try again later).
 */
export interface ReceiverLimits {
  connections: number
  connectionsPerClient: number
  perClientPerMinute: number
  perMailboxPerMinute: number
}

export const RECEIVER_LIMITS: ReceiverLimits = { connections: 500, connectionsPerClient: 10, perClientPerMinute: 20, perMailboxPerMinute: 600 }

/** Whether two domains are one organisation's, as DMARC's relaxed alignment sees it near enough: one is the other or under it. */
export const sameOrganisation = (a: string, b: string) => {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()]
  return x === y || x.endsWith(`.${y}`) || y.endsWith(`.${x}`)
}

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
  /** RECEIVER_LIMITS unless told (smaller in tests). */
  limits?: Partial<ReceiverLimits>
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

export default fp<{ settings?: ReceiverSettings; limits: FileLimits; spam?: SpamSettings }>(
  async (fastify, { settings, limits, spam }) => {
    fastify.decorate('mailReceiver', { port: 0 })
    if (!settings) return
    // Loaded only where mail is taken in (docs/decisions.md, "Loaded on first use"): smtp-server,
    // mailauth and mailparser are some megabytes that most processes never need.
    const [{ SMTPServer }, { authenticate }, { MAX_MESSAGE_BYTES, takeMessage, pipelineOf }] = await Promise.all([import('smtp-server'), import('mailauth'), loadPipeline()])
    const maxBytes = settings.maxBytes ?? MAX_MESSAGE_BYTES
    const { mailboxes } = fastify
    const serverName = new URL(fastify.config.baseUrl).hostname
    const pipeline = pipelineOf(fastify, limits, spam)

    /**
     * What the receiver knows of the sender (mailauth: SPF of the connecting address, DKIM, their
     * alignment with the From, DMARC). `verified` is DMARC's verdict: true pass, false fail, null
     * when the domain publishes no policy or DNS could not say. A fail under a policy of `reject` or
     * `quarantine` is refused (the domain's owner asked for it, RFC 7489), and one under `none` is
     * kept, marked. An acknowledgement may go only to a From the message was tied to: a DMARC pass,
     * or, without a policy, a DKIM signature or an SPF pass of the From's own domain.
     */
    async function senderCheck(raw: Buffer, session: SMTPServerSession): Promise<SenderCheck & { refused?: string }> {
      const connection = { ip: session.remoteAddress, helo: session.hostNameAppearsAs, mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '' }
      try {
        const { dmarc, dkim, spf } = await authenticate(raw, {
          ip: connection.ip,
          helo: connection.helo,
          sender: connection.mailFrom,
          mta: serverName,
          resolver: settings!.resolver,
          disableArc: true,
          disableBimi: true,
        })
        const result = dmarc ? dmarc.status.result : 'none'
        if (dmarc && result === 'fail' && (dmarc.policy === 'reject' || dmarc.policy === 'quarantine')) {
          return { verified: false, acknowledge: false, refused: `5.7.1 The sender's domain (${dmarc.domain}) asks that mail failing its DMARC check be refused` }
        }
        const fromDomain = dmarc ? dmarc.domain : undefined
        const tied =
          result === 'pass' ||
          (result === 'none' &&
            fromDomain !== undefined &&
            (dkim.results.some((r) => r.status.result === 'pass' && Boolean(r.status.aligned)) || (spf !== false && spf.status.result === 'pass' && sameOrganisation(spf.domain, fromDomain))))
        return { verified: result === 'pass' ? true : result === 'fail' ? false : null, acknowledge: tied, connection }
      } catch (error) {
        fastify.log.warn({ err: error }, 'mail receiver: the sender could not be checked')
        return { verified: null, acknowledge: false, connection }
      }
    }

    /** Takes the message for each site it is addressed to (a site once, whatever its addresses among them). */
    async function deliver(raw: Buffer, session: SMTPServerSession): Promise<Outcome[]> {
      const check = await senderCheck(raw, session)
      if (check.refused) return [{ kind: 'refused', reason: check.refused }]
      clientPace.fail([addressBlock(session.remoteAddress)])
      const sites = new Set<number>()
      const outcomes: Outcome[] = []
      for (const recipient of session.envelope.rcptTo) {
        const mailbox = await mailboxes.reaches(recipient.address)
        if (!mailbox || sites.has(mailbox.siteId)) continue
        sites.add(mailbox.siteId)
        mailboxPace.fail([String(mailbox.id)])
        const outcome = await takeMessage(pipeline, mailbox, raw, check)
        fastify.log.info({ mail: { door: 'receiver', site: mailbox.siteId, ...outcome } }, 'mail taken in')
        outcomes.push(outcome)
      }
      return outcomes
    }

    // Kept in this process's memory (one receiver listens on one port), counted per connecting
    // address by its block, as every budget by address is.
    const pace = { ...RECEIVER_LIMITS, ...settings.limits }
    const clientPace = createAttemptLimiter({ max: pace.perClientPerMinute, windowMs: 60_000, clock: fastify.clock })
    const mailboxPace = createAttemptLimiter({ max: pace.perMailboxPerMinute, windowMs: 60_000, clock: fastify.clock })
    const connected = new Map<string, Set<string>>()

    const server = new SMTPServer({
      name: serverName,
      banner: 'Service Desk',
      size: maxBytes,
      // An MX takes mail from anyone, without authentication; STARTTLS with a certificate only.
      authOptional: true,
      disabledCommands: settings.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      ...(settings.tls && { cert: settings.tls.cert, key: settings.tls.key }),
      logger: false,
      maxClients: pace.connections,
      // The connecting address as it is: no reverse look-up to wait on before the limits below.
      disableReverseLookup: true,
      onConnect(session, callback) {
        const block = addressBlock(session.remoteAddress)
        const open = connected.get(block) ?? new Set<string>()
        if (open.size >= pace.connectionsPerClient) return callback(refusal(421, '4.7.0 Too many connections from your address: try again later'))
        connected.set(block, open.add(session.id))
        callback()
      },
      onClose(session) {
        // Also called for connections refused before onConnect: only those counted are let go.
        const block = addressBlock(session.remoteAddress ?? '')
        const open = connected.get(block)
        if (open?.delete(session.id) && open.size === 0) connected.delete(block)
      },
      onMailFrom(_address, session, callback) {
        const verdict = clientPace.check([addressBlock(session.remoteAddress)])
        callback(verdict.allowed ? undefined : refusal(451, `4.7.0 More than ${pace.perClientPerMinute} messages a minute from your address: try again later`))
      },
      onRcptTo(address, _session, callback) {
        mailboxes.reaches(address.address).then(
          (mailbox) =>
            callback(
              !mailbox
                ? refusal(550, `5.1.1 <${address.address}>: no mailbox of this help desk`)
                : !mailboxPace.check([String(mailbox.id)]).allowed
                  ? refusal(451, `4.7.0 More than ${pace.perMailboxPerMinute} messages a minute to <${mailbox.address}>: try again later`)
                  : undefined,
            ),
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
              const reply = refused && (/^5\.\d+\.\d+ /.test(refused.reason) ? refused.reason : `5.6.0 ${refused.reason}`)
              callback(reply ? refusal(550, reply) : later ? refusal(451, `4.7.0 ${later.reason}: try again later`) : null, 'Message taken')
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
