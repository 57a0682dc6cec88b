import { performance } from 'node:perf_hooks'
import fp from 'fastify-plugin'
import { Webhook as Signer } from 'standardwebhooks'
import type { OutboxRow } from '../../db/stores/outbox.ts'
import { TEST_EVENT, type Webhook } from '../../db/stores/webhooks.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { withoutNul } from '../../lib/nul.ts'
import { parseWebhookUrl, type AllowedRange } from '../../lib/webhook-address.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { createAttemptLimiter, type AttemptVerdict } from '../auth/attempt-limiter.ts'
import { createConnections, post, target, type Answer, type Resolve } from './post.ts'

// The delivery of a webhook row of the outbox (docs/decisions.md, "Webhooks"), which the outbox's
// sender (plugins/mail/sender.ts) hands here: under the row's lease, signed as Standard Webhooks
// asks (webhook-id, the event's, the same on every try; webhook-timestamp; webhook-signature, by
// each secret that signs now), posted once (plugins/webhooks/post.ts), each try in the log. A 2xx
// delivers it. A 5xx, 408, 429, a timeout or a refused connection is tried again on
// RETRY_SCHEDULE_MS, with jitter, for about a day; any other answer (a redirect, which is not
// followed, or a 4xx) and an address refused end it. An endpoint that has failed every try for
// FAILING_DAYS is switched off, and its site's administrators are mailed.

/** The wait before each try again, after the first: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (27.6 hours in all). */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
/** The jitter of each wait: up to a tenth either way. */
export const JITTER = 0.1
/** How long an endpoint fails every try before it is switched off. */
export const FAILING_DAYS = 5
/** How long a try may take, by default. */
export const DEFAULT_TIMEOUT_MS = 10_000
/** The lease on a row while it is posted: twice a try's deadline and more, so it outlives any try; a process killed mid-try lets the row go when it ends. */
export const leaseMs = (timeoutMs: number) => 2 * timeoutMs + 5_000

export interface DeliverySettings {
  /** The ranges the operator allows though they are private (SERVICE_WEBHOOK_ALLOW). */
  allowed?: readonly AllowedRange[]
  timeoutMs?: number
  /** A number in [0, 1) for the jitter; Math.random by default. */
  random?: () => number
  /** How names are looked up; the system's by default. */
  resolve?: Resolve
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Posts a webhook row of the outbox once, under its lease; whether it was delivered. */
    deliverWebhook(row: OutboxRow): Promise<boolean>
    /** The webhook address as kept, checked against the ranges this service refuses (a StoreError on `url` otherwise). */
    webhookUrl(value: string): string
    /** Prunes the log of tries older than three days, and the rows it named, when an hour has passed since the last time. */
    pruneWebhooks(): Promise<void>
    /** Takes one send by hand (the test event, "Send again") of an endpoint from its minute's budget; whether it may go, and when to try again. */
    webhookSendByHand(webhookId: number): AttemptVerdict
  }
}

/** Sends by hand (the test event, "Send again") a minute per endpoint, the pages and the API together. */
export const SENDS_BY_HAND_PER_MINUTE = 10

/** How often the log of tries older than three days is pruned. */
const PRUNE_EVERY_MS = 60 * 60 * 1000

/** The wait before try `tries + 1` (after `tries` failed), with its jitter; null when the schedule is done. */
export function retryDelay(tries: number, random: () => number): number | null {
  const wait = RETRY_SCHEDULE_MS[tries - 1]
  return wait === undefined ? null : Math.round(wait * (1 + JITTER * (2 * random() - 1)))
}

/** What an answer comes to: delivered, or the words of the failure and whether it is tried again. */
export function judge(answer: Answer): { delivered: true } | { delivered: false; words: string; again: boolean } {
  const { status } = answer
  if (status >= 200 && status < 300) return { delivered: true }
  if (status >= 300 && status < 400) return { delivered: false, words: `answered ${status}, a redirect${answer.location ? ` to ${answer.location}` : ''}, which is not followed`, again: false }
  return { delivered: false, words: `answered ${status}`, again: status >= 500 || status === 408 || status === 429 }
}

/** The Standard Webhooks headers of a try: signed by each secret given, at `at`. */
export function signedHeaders(eventId: string, at: Date, payload: string, secrets: string[]): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Service-Desk-Webhooks/1',
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Signer(secret).sign(eventId, at, payload)).join(' '),
  }
}

export default fp<DeliverySettings>(
  async (fastify, settings) => {
    const { outbox, webhooks, clock, urls } = fastify
    const allowed = settings.allowed ?? []
    const timeoutMs = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const random = settings.random ?? Math.random
    // Connections kept alive between deliveries to one endpoint, closed with the app.
    const connections = createConnections()
    fastify.addHook('onClose', async () => connections.close())

    /** The mail telling an administrator that the endpoint was switched off. */
    const switchedOffMail = (webhook: Webhook & { permalink: string }, reason: string) => (to: string) => ({
      to,
      subject: `A webhook of your site was switched off: ${webhook.url}`,
      text: [
        `The webhook ${webhook.url} was switched off: ${reason}.`,
        'Its events are no longer posted. When the endpoint answers again, switch it back on:',
        `${urls.siteWeb(webhook.permalink)}/admin/webhooks`,
      ].join('\n\n'),
    })

    type Outcome = { delivered: true; status: number; answer: string } | { delivered: false; words: string; again: boolean; status: number | null; answer: string }

    /** One try, the look-up of its name included, within timeoutMs in all. */
    async function tryOnce(webhook: Webhook, row: OutboxRow, secrets: string[]): Promise<Outcome> {
      const url = new URL(webhook.url)
      const deadline = performance.now() + timeoutMs
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<{ late: true }>((resolve) => (timer = setTimeout(() => resolve({ late: true }), timeoutMs)))
      try {
        // A look-up that hangs (a name server that does not answer) is left behind at the deadline.
        const to = await Promise.race([target(url, allowed, settings.resolve), late])
        if ('late' in to) return { delivered: false, words: `no answer within ${timeoutMs / 1000} s (looking up ${url.hostname})`, again: true, status: null, answer: '' }
        if ('unknown' in to) return { delivered: false, words: to.unknown, again: true, status: null, answer: '' }
        if ('refused' in to) return { delivered: false, words: `refused: ${to.refused}`, again: false, status: null, answer: '' }
        const answer = await post(url, connections.agentFor(url, to), signedHeaders(row.eventId!, new Date(clock()), row.payload, secrets), row.payload, Math.max(1, deadline - performance.now()))
        return { ...judge(answer), status: answer.status, answer: withoutNul(answer.answer) }
      } catch (error) {
        // The deadline is the try's, look-up included: said in its own words.
        const words = (error as NodeJS.ErrnoException).code === 'TIMEOUT' ? `no answer within ${timeoutMs / 1000} s` : withoutNul((error as Error).message)
        return { delivered: false, words, again: true, status: null, answer: '' }
      } finally {
        clearTimeout(timer)
      }
    }

    // Each such send is a request to the endpoint's server: paced, so the service is no one's
    // instrument to flood an address with (kept in this process's memory, as the attempt limits are).
    const byHand = createAttemptLimiter({ max: SENDS_BY_HAND_PER_MINUTE, windowMs: 60_000, clock: fastify.clock })
    fastify.decorate('webhookSendByHand', (webhookId: number) => {
      const key = [String(webhookId)]
      const verdict = byHand.check(key)
      if (verdict.allowed) byHand.fail(key)
      return verdict
    })

    fastify.decorate('webhookUrl', (value: string) => {
      const url = parseWebhookUrl(value, allowed)
      if (typeof url === 'string') throw new StoreError(url, 'invalid', 'url')
      return url.href
    })

    // The log of tries and the ended rows, pruned once an hour by the run of the sender that finds it due.
    let prunedAt = -Infinity
    fastify.decorate('pruneWebhooks', async () => {
      if (clock() - prunedAt < PRUNE_EVERY_MS) return
      prunedAt = clock()
      await webhooks.prune()
    })

    /** What happens after a failed try: tried again on the schedule, or not; the endpoint switched off when it has failed for days. */
    async function failed(webhook: Webhook & { permalink: string }, row: OutboxRow, lease: Date | null, outcome: { words: string; again: boolean; status: number | null }, type: string) {
      const tries = row.attempts + 1
      const wait = outcome.again ? retryDelay(tries, random) : null
      await outbox.tried(row.id, outcome.words, wait === null ? null : new Date(clock() + wait), lease)
      fastify.log.warn({ webhook: { id: webhook.id, event: row.eventId, type, tries, status: outcome.status, again: wait !== null } }, 'a webhook was not delivered')
      const failingSince = await webhooks.failed(webhook.id)
      // Removed while it was tried: nothing more to do.
      if (failingSince && clock() - failingSince.getTime() >= FAILING_DAYS * DAY_MS) {
        const reason = `every delivery since ${failingSince.toISOString()} failed, the last one: ${outcome.words}`
        if (await webhooks.switchOff(webhook.id, reason, switchedOffMail(webhook, reason))) {
          fastify.log.warn({ webhook: { id: webhook.id } }, 'a webhook failing for days was switched off')
        }
      }
    }

    /** Posts the row under its lease, records the try, and moves the row on. */
    async function deliver(row: OutboxRow): Promise<boolean> {
      // Every webhook row names its endpoint (db/stores/webhooks.ts writes none without).
      const webhook = await webhooks.byId(row.webhookId!)
      const type = (JSON.parse(row.payload) as { type: string }).type
      if (!webhook || (!webhook.enabled && type !== TEST_EVENT)) {
        await outbox.tried(row.id, 'the webhook is switched off', null, row.leaseUntil)
        return false
      }
      const secrets = await webhooks.secrets(webhook)
      if (!secrets) {
        // Sealed under another server key (the key was changed since): nothing unsigned is ever posted.
        await failed(webhook, row, row.leaseUntil, { words: 'its secret was sealed under another server key: give it a new secret', again: false, status: null }, type)
        return false
      }
      const started = performance.now()
      const outcome = await tryOnce(webhook, row, secrets)
      const durationMs = Math.round(performance.now() - started)
      await webhooks.record({ webhookId: webhook.id, outboxId: row.id, eventId: row.eventId!, eventType: type, status: outcome.status, durationMs, answer: outcome.answer, error: outcome.delivered ? null : outcome.words })
      if (!outcome.delivered) {
        await failed(webhook, row, row.leaseUntil, outcome, type)
        return false
      }
      await outbox.sent(row.id, row.leaseUntil)
      // A failing endpoint answered: it is failing no longer.
      if (webhook.failingSince) await webhooks.succeeded(webhook.id)
      return true
    }

    fastify.decorate('deliverWebhook', async (due: OutboxRow): Promise<boolean> => {
      // The row as the claim left it: its tries counted by whichever process tried it last.
      const row = await outbox.claim(due.id, leaseMs(timeoutMs))
      if (!row) return false
      try {
        return await deliver(row)
      } catch (error) {
        // A fault of ours (the database away): the row is tried again in a while, its lease let go.
        fastify.log.warn({ err: error, webhook: { id: row.webhookId, event: row.eventId } }, 'a webhook could not be delivered')
        await outbox.tried(row.id, 'the service could not deliver it; it is tried again', new Date(clock() + RETRY_SCHEDULE_MS[0]!), row.leaseUntil).catch(() => {})
        return false
      }
    })
  },
  { name: 'webhook-delivery', fastify: '5.x', dependencies: ['discussion-stores', 'webhook-store'] },
)
