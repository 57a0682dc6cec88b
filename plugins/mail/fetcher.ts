import { randomBytes } from 'node:crypto'
import { readlinkSync } from 'node:fs'
import { hostname } from 'node:os'
import fp from 'fastify-plugin'
import type { ImapFlow } from 'imapflow'
import { StoreError } from '../../db/stores/errors.ts'
import type { Deferred, Mailbox } from '../../db/stores/mail.ts'
import type { FileLimits } from '../../lib/files.ts'
import { failureWords, imapClient } from '../../lib/imap.ts'
import { MAX_MESSAGE_BYTES } from '../../lib/mail.ts'
import { renewalDue } from '../../lib/mail-oauth.ts'
import { repeatInBackground } from '../background.ts'
import { SignInUnavailable, type MailAccess } from './oauth.ts'
import type { FetchPosition, Outcome, Pipeline, SpamSettings } from './pipeline.ts'

// Mail in by IMAP (docs/decisions.md, "Mail"): for each mailbox with an IMAP address, one process
// at a time (the one holding the mailbox's lease in the database) keeps a connection open,
// listens with IDLE where the server offers it (imapflow polls with NOOP where it does not), and
// looks for new messages at least every `everyMs` (SERVICE_MAIL_FETCH_SECONDS). Each message is
// handed to the one pipeline (plugins/mail/pipeline.ts), and the fetch's place (UIDVALIDITY and
// the UID) moves in the transaction of the discussion the message becomes: a process killed at any
// point leaves the place at the last message written, so the next fetch (by it after a restart, or
// by another once the lease runs out) takes each message once. Taken messages are flagged \Seen.

/** How often a mailbox is looked at when the server says nothing (and other processes' leases are checked). */
export const FETCH_EVERY_MS = 60_000

declare module 'fastify' {
  interface FastifyInstance {
    /** This process's name in the mailboxes' leases; `scan` looks for mailboxes to fetch now (tests). */
    mailFetcher: { owner: string; scan(): Promise<void> }
  }
}

// A function, as the receiver's: the compiled build rewrites this import's extension.
const loadPipeline = () => import('./pipeline.ts')

/**
 * This machine as a lease names it: its host name and, on Linux, its PID namespace, so that two
 * containers sharing a host name (`--network host`, or one `hostname:`) are not one machine whose
 * processes each could look for in the other's.
 */
export function machineName(): string {
  let namespace = ''
  try {
    namespace = readlinkSync('/proc/self/ns/pid').replace(/\D/g, '')
  } catch {
    // Not Linux: the host name alone.
  }
  return namespace === '' ? hostname() : `${hostname()}:${namespace}`
}

/** machineName, read once a process: a process does not change machines. */
let thisMachine: string | undefined
const here = () => (thisMachine ??= machineName())

/**
 * Whether a lease's holder (`machine/pid/…`) is a process of this machine that is no more: the
 * same machine (machineName), another pid, and no process of that pid (a signal 0 finds none). A
 * pid taken again by another process looks alive: the lease then runs out as for a holder elsewhere.
 */
export function holderIsGone(holder: string, host = here(), ownPid = process.pid): boolean {
  const [holderHost, pid] = holder.split('/')
  if (holderHost !== host || !/^\d{1,10}$/.test(pid ?? '') || Number(pid) === ownPid) return false
  try {
    process.kill(Number(pid), 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/** Outcomes that leave the message in the mailbox unread, for a person to look at. */
const LEFT_UNREAD = new Set<Outcome['kind']>(['refused', 'later'])

export default fp<{ everyMs?: number; limits: FileLimits; spam?: SpamSettings }>(
  async (fastify, { everyMs = FETCH_EVERY_MS, limits, spam }) => {
    const { mailboxes } = fastify
    const owner = `${here()}/${process.pid}/${randomBytes(4).toString('hex')}`
    // A lease outlives three looks, so a live process always renews it in time.
    const leaseMs = 3 * everyMs
    const workers = new Map<number, Promise<void>>()
    const clients = new Set<ImapFlow>()
    const wakers = new Set<() => void>()
    // Connected mailboxes whose access token the IMAP server refused: renewed before the next connection.
    const refusedTokens = new Set<number>()
    let closing = false

    /** Starts fetching each IMAP mailbox no live process holds; none while mail is held here (plugins/mail/home.ts). */
    async function scan(): Promise<void> {
      const fetched = await mailboxes.fetched()
      if (fetched.length === 0 || (await fastify.mailHeld())) return
      for (const mailbox of fetched) {
        if (closing || workers.has(mailbox.id)) continue
        // A holder on this machine whose process is gone (killed, crashed) is taken over at once,
        // not when its lease runs out.
        const gone = mailbox.leaseOwner !== null && holderIsGone(mailbox.leaseOwner) ? mailbox.leaseOwner : undefined
        const leased = await mailboxes.lease(mailbox.id, owner, leaseMs, gone)
        if (leased && gone) fastify.log.info({ mailbox: { id: mailbox.id, address: mailbox.address } }, 'took over the IMAP mailbox of a process that is gone')
        if (!leased) continue
        // Whatever escapes a fetch (a database in trouble) is logged: the next scan tries again, and the process goes on.
        const fetching = watch(leased).catch((error: unknown) => fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address }, err: { message: failureWords(error) } }, 'IMAP fetch stopped'))
        workers.set(mailbox.id, fetching.finally(() => workers.delete(mailbox.id)))
      }
    }
    fastify.decorate('mailFetcher', { owner, scan })

    /** Waits `ms`, or less when the server says a message came (`news.came`) or the app closes. */
    function pause(ms: number, news: { came: boolean }): Promise<void> {
      if (news.came || closing) return Promise.resolve()
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          wakers.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, ms)
        wakers.add(wake)
      })
    }

    /**
     * Fetches one mailbox while this process holds its lease; ends on an error (the next scan tries
     * again) or when the lease is lost. A connected mailbox's connection is made again with a new
     * access token before its token ends (a provider may cut a connection whose token ended).
     */
    async function watch(leased: Mailbox): Promise<void> {
      let mailbox: Mailbox | undefined = leased
      while (mailbox && !closing) mailbox = await connection(mailbox)
    }

    /** One IMAP connection of a leased mailbox: the mailbox to connect again with a new token, or undefined when the fetch ends. */
    async function connection(leased: Mailbox): Promise<Mailbox | undefined> {
      let mailbox = leased
      const settings = await mailboxes.imapOf(mailbox)
      if (!settings) {
        await mailboxes.fetchEnded(mailbox.id, 'the IMAP password cannot be opened with this server key: add the mailbox again')
        return undefined
      }
      let access: MailAccess | undefined
      if (mailbox.oauthProvider) {
        try {
          // A token good for the next look at least: the connection is made again before it ends.
          access = await fastify.mailOAuth.access(mailbox, refusedTokens.delete(mailbox.id), everyMs)
        } catch (error) {
          // The provider's refusal, or the database's trouble: said, and tried again at the next scan.
          const words = error instanceof SignInUnavailable ? error.message : failureWords(error)
          if (!(error instanceof SignInUnavailable)) fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address }, err: { message: words } }, 'could not get a connected mailbox\'s access')
          await mailboxes.fetchEnded(mailbox.id, words).catch(() => {})
          return undefined
        }
      }
      const [client, { pipelineOf }] = await Promise.all([imapClient(settings, access), loadPipeline()])
      const pipeline = pipelineOf(fastify, limits, spam)
      clients.add(client)
      const news = { came: false }
      const wakeOnNews = () => {
        news.came = true
        wakers.forEach((wake) => wake())
      }
      client.on('exists', wakeOnNews)
      client.on('error', (error: Error) => fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address }, err: { message: failureWords(error) } }, 'IMAP connection error'))
      try {
        await client.connect()
        // imap:// signs in over plain text when the server offers no STARTTLS: said at each connection.
        if (!client.secureConnection) fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address } }, 'IMAP mailbox signs in without TLS: its password crosses the network in plain text (use imaps://)')
        const opened = await client.mailboxOpen(settings.folder)
        const validity = String(opened.uidValidity)
        while (!closing) {
          news.came = false
          if (!(await fetchNew(client, mailbox, validity, pipeline))) return undefined
          await mailboxes.fetchEnded(mailbox.id, null)
          // A connected mailbox's token ends before the next look: connected again with a new one.
          if (access && renewalDue(access, fastify.clock() + everyMs)) return mailbox
          await pause(everyMs, news)
          // Gone (removed, or connected again: its lease is kept, its sign-in changes), taken by
          // another, or mail held (`mail hold`): the connection ends.
          const renewed = !closing && !(await fastify.mailHeld()) && (await mailboxes.lease(mailbox.id, owner, leaseMs))
          if (!renewed || renewed.imap !== mailbox.imap) return undefined
          mailbox = renewed
        }
      } catch (error) {
        if (closing) return undefined
        // A token the server refused (revoked at the provider before it ended): the next try renews it first.
        // (imapflow's authenticationFailed, but for a server that could not check it: UNAVAILABLE.)
        const { authenticationFailed, serverResponseCode } = error as { authenticationFailed?: boolean; serverResponseCode?: string }
        if (access && authenticationFailed && serverResponseCode !== 'UNAVAILABLE') refusedTokens.add(mailbox.id)
        fastify.log.warn({ mailbox: { id: mailbox.id, address: mailbox.address }, err: { message: failureWords(error) } }, 'IMAP fetch failed')
        await mailboxes.fetchEnded(mailbox.id, failureWords(error)).catch(() => {})
      } finally {
        client.off('exists', wakeOnNews)
        clients.delete(client)
        await client.logout().catch(() => client.close())
      }
      return undefined
    }

    /**
     * Takes the messages put off for later whose sender's minute allows them now, then those after
     * the fetch's place, in UID order; false when another process holds the mailbox now.
     */
    async function fetchNew(client: ImapFlow, mailbox: Mailbox, validity: string, pipeline: Pipeline): Promise<boolean> {
      const { takeMessage, UNCHECKED } = await loadPipeline()
      let from = mailbox.imapPosition
      const [knownValidity, lastUid] = from?.split(':') ?? []
      // A new mailbox, or one whose UIDs the server renumbered (UIDVALIDITY changed): from its
      // first message; what was taken before is known by its Message-ID and not taken again.
      const after = knownValidity === validity ? Number(lastUid) : 0
      // The new messages and their sizes, in one command ("*" is the last message, even when old).
      const sizes = new Map<number, number>()
      for await (const { uid, size = 0 } of client.fetch(`${after + 1}:*`, { uid: true, size: true }, { uid: true })) if (uid > after) sizes.set(uid, size)
      const uids = [...sizes.keys()].sort((a, b) => a - b)
      let deferred = await mailboxes.deferred(mailbox, validity)
      const defer = async (next: Deferred[]) => {
        deferred = next
        await mailboxes.defer(mailbox.id, owner, validity, deferred)
      }

      /** One message by its UID through the pipeline (`position`: the place moves past it with it); a message too large is passed over without being downloaded. */
      async function take(uid: number, size: number | undefined, position?: FetchPosition): Promise<Outcome> {
        if (size !== undefined && size > MAX_MESSAGE_BYTES) return { kind: 'refused', reason: `the message is larger than ${MAX_MESSAGE_BYTES / (1024 * 1024)} MB` }
        const message = await client.fetchOne(String(uid), { uid: true, source: true }, { uid: true })
        if (!message || !message.source) return { kind: 'refused', reason: 'the server gave no message for this UID' }
        return takeMessage(pipeline, mailbox, message.source, UNCHECKED, position)
      }
      /** What follows an outcome: the log, the reason of a message passed over on the mailbox's page, \Seen on what was taken. */
      async function handled(uid: number, outcome: Outcome) {
        fastify.log.info({ mail: { door: 'imap', site: mailbox.siteId, mailbox: mailbox.address, uid, ...outcome } }, 'mail taken in')
        if (outcome.kind === 'refused') await mailboxes.passedOver(mailbox.id, `UID ${uid}: ${outcome.reason}`)
        if (!LEFT_UNREAD.has(outcome.kind)) await client.messageFlagsAdd(String(uid), ['\\Seen'], { uid: true })
      }

      try {
        // A message put off for later is never passed over: looked at again once its sender's minute allows.
        const stillFull = new Set<string>()
        for (const [uid, sender] of deferred) {
          if (closing) return true
          // One look a round per sender still past its limit: the rest of theirs wait without being downloaded.
          if (stillFull.has(sender)) continue
          const outcome = await take(uid, undefined)
          if (outcome.kind === 'later') {
            stillFull.add(sender)
            continue
          }
          await defer(deferred.filter(([other]) => other !== uid))
          await handled(uid, outcome)
        }
        for (const uid of uids) {
          if (closing) return true
          // Each message moves the place and renews the lease, so a long fetch (a backlog) keeps it.
          const position: FetchPosition = { owner, from, to: `${validity}:${uid}`, leaseMs }
          const outcome = await take(uid, sizes.get(uid), position)
          // Written down before the place moves past it: a process stopped between the two takes it from the list.
          if (outcome.kind === 'later') await defer([...deferred, [uid, outcome.sender]])
          // What wrote nothing moves the place on its own.
          if (outcome.kind !== 'opened' && outcome.kind !== 'added') await mailboxes.advance(mailbox.id, position)
          from = position.to
          await handled(uid, outcome)
        }
      } catch (error) {
        if (error instanceof StoreError && error.field === 'imap_position') return false
        throw error
      }
      return true
    }

    repeatInBackground(fastify, { firstAfterMs: Math.min(everyMs, 1_000), everyMs }, async () => {
      try {
        await scan()
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not look for mailboxes to fetch')
      }
    })
    fastify.addHook('onClose', async () => {
      closing = true
      const held = [...workers.keys()]
      wakers.forEach((wake) => wake())
      // A connection under way (or a command waiting on a slow server) ends now.
      clients.forEach((client) => client.close())
      await Promise.all(workers.values())
      // Another process may take the mailboxes at once, not when the leases run out.
      await Promise.all(held.map((id) => mailboxes.release(id, owner)))
    })
  },
  { name: 'mail-fetcher', fastify: '5.x', dependencies: ['config', 'mail-home', 'mail-oauth', 'discussion-stores', 'server-key'] },
)
