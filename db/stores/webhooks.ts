import { randomBytes } from 'node:crypto'
import { and, asc, desc, eq, gte, inArray, lt, notExists, sql } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import { webhookEvents, type WebhookEvent } from '../values.ts'
import type { SlaAlert } from '../../lib/sla.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import type { CommentRow, DiscussionRow } from './discussion-listing.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { attachmentsOf, type Attachment } from './files.ts'
import type { OutboxMail } from './outbox.ts'
import { lockSite } from './sites.ts'
import { siteAdministrators } from './staff.ts'

// The sites' webhooks, one store for both engines (docs/decisions.md, "Webhooks"): the endpoints
// each site's administrators set, the events the stores tell of (an EventSink, called by each
// store in the transaction of the change), and the log of every try. An event for an endpoint is
// a row of the one outbox (db/stores/outbox.ts, kind `webhook`), written in that transaction, so it
// is posted exactly when its cause commits; plugins/webhooks/delivery.ts posts it.

export type Webhook = Tables['webhooks']['$inferSelect']
export type WebhookDelivery = Tables['webhookDeliveries']['$inferSelect']

/** What the stores tell of, in the transaction of the change: the rows as written. */
export type StoreEvent = (
  | { type: 'discussion.updated' | 'discussion.deleted' | 'discussion.restored' | 'discussion.spam' | 'discussion.merged' | 'satisfaction.rated'; siteId: number; discussion: DiscussionRow; /** As it was before the change, where the store has it (the rules' triggers). */ before?: DiscussionRow }
  | { type: 'rule.fired'; siteId: number; discussion: DiscussionRow; rule: { id: number; name: string } }
  | { type: 'discussion.created' | 'comment.created'; siteId: number; discussion: DiscussionRow; comment: CommentRow; /** Whether the comment carries files (read only then). */ files: boolean; /** A reply's discussion as it was before (the rules' triggers: a reply may move its state). */ before?: DiscussionRow }
  | { type: 'sla.warning' | 'sla.breached'; siteId: number; discussion: DiscussionRow; alert: SlaAlert }
  | { type: 'token.created' | 'token.revoked' | 'token.leaked'; siteId: number; token: EventToken }
  | { type: 'application.authorized'; siteId: number; application: EventApplication }
  | { type: 'customer.erased'; siteId: number; erasure: EventErasure }
) & {
  /** Who listens on the site, when the write read it (listenersIn) or the rules' sink did: the webhooks' sink reads nothing more. */
  listeners?: Listeners
}

/** A customer erased (db/stores/erasure.ts): who they were by id, and the discussions' numbers by what became of them. */
export interface EventErasure {
  customerId: number
  /** The site's account that now signs what they wrote. */
  erasedId: number
  at: Date
  deleted: number[]
  anonymised: number[]
  others: number[]
}

/** A personal token as its events show it (without its value, which is nowhere). */
export interface EventToken {
  id: number
  name: string
  access: 'read' | 'write'
  createdAt: Date
  lastUsedAt: Date | null
  expiresAt: Date
  revokedAt: Date | null
  owner: { email: string; name: string }
}

/** An application a person authorized on a site. */
export interface EventApplication {
  grantId: string
  clientId: string
  name: string
  access: 'read' | 'write'
  owner: { email: string; name: string }
  createdAt: Date
}

/** An event as it is shown: with the files of its comment, read when some endpoint asks for it. */
export type ShownEvent = StoreEvent & { attachments: Attachment[] }

/** The v1 JSON of an event's resource (app.ts gives the routes' views); `permalink` is its site's. */
export type EventRender = (permalink: string, event: ShownEvent) => unknown

/**
 * Tells the site's webhook endpoints of a change, in the transaction `tx` of that change; true when
 * what it told of started a rule that changed the discussion (db/stores/rules.ts): the caller reads it again.
 */
export type EventSink = (tx: StorePort, event: StoreEvent) => Promise<boolean | void>

/**
 * Who listens to a site's events: its webhooks that are on (with the site's permalink, their
 * payloads' links) and the version of its rules (db/stores/rules.ts reads them again when it moved).
 * One statement. A new discussion or a reply reads it before it takes the site's row and gives it
 * with its event, so its events read nothing while the site's other writes wait for that row.
 */
export interface Listeners {
  rulesVersion: number
  webhooks: Array<{ id: number; events: string; internalComments: boolean; permalink: string }>
}

export async function listenersIn(tx: StorePort, siteId: number): Promise<Listeners> {
  const { sites, webhooks } = tx.tables
  const read = tx.prepared('webhooks_listeners', (db) =>
    db
      .select({ rulesVersion: sites.rulesVersion, permalink: sites.permalink, id: webhooks.id, events: webhooks.events, internalComments: webhooks.internalComments })
      .from(sites)
      .leftJoin(webhooks, and(eq(webhooks.siteId, sites.id), eq(webhooks.enabled, true)))
      .where(eq(sites.id, sql.placeholder('siteId')))
      .orderBy(asc(webhooks.id))
      .prepare('webhooks_listeners'),
  )
  const rows = await read.execute({ siteId })
  return {
    rulesVersion: rows[0]?.rulesVersion ?? 0,
    webhooks: rows.flatMap(({ id, events, internalComments, permalink }) => (id === null ? [] : [{ id, events: events!, internalComments: internalComments!, permalink }])),
  }
}

/** The sink of stores built without webhooks (the command line's, a store's own tests). */
export const noEvents: EventSink = async () => {}

/** The type of the test event an administrator sends by hand: never asked for, always delivered. */
export const TEST_EVENT = 'webhook.test'

/** How long a rotated secret still signs beside the new one. */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000

/** How long the log of tries (and the outbox rows they were of) is kept. */
export const DELIVERY_LOG_MS = 3 * 24 * 60 * 60 * 1000

/** The most endpoints a site may have. */
export const MAX_WEBHOOKS = 20

/** A new signing secret in the Standard Webhooks form: whsec_ and 24 random bytes in base64. */
export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`

/** A new event id, the webhook-id of every try of it: msg_ and 16 random bytes. */
export const newEventId = () => `msg_${randomBytes(16).toString('base64url')}`

/** The envelope every delivery posts: the event's type, when it happened, and its resource. */
export function envelope(type: string, at: Date, data: unknown): string {
  return JSON.stringify({ type, timestamp: at.toISOString(), data })
}

/** What an administrator sets on an endpoint. */
export interface WebhookSettings {
  url: string
  description?: string
  events: readonly string[]
  internalComments?: boolean
  enabled?: boolean
}

/** The events named, checked: known ones, at least one, each once. */
export function checkEvents(events: readonly string[]): WebhookEvent[] {
  const unknown = events.filter((name) => !(webhookEvents as readonly string[]).includes(name))
  if (unknown.length > 0) throw new StoreError(`names ${unknown.map((name) => `"${name}"`).join(', ')}, which ${unknown.length === 1 ? 'is not an event' : 'are not events'}: ${webhookEvents.join(', ')}`, 'invalid', 'events')
  if (events.length === 0) throw new StoreError('names no event: ask for at least one', 'invalid', 'events')
  return webhookEvents.filter((name) => events.includes(name))
}

/** The endpoint's events as a list. */
export const eventsOf = (webhook: Pick<Webhook, 'events'>): WebhookEvent[] => webhook.events.split(' ') as WebhookEvent[]

/**
 * The sink of the app: each enabled endpoint of the site that asks for the event gets a row of the
 * outbox. Of a discussion marked spam, only that it was (discussion.spam) is told: its comments and
 * changes stay in the service until it is marked not spam (told as discussion.restored).
 */
export function createEventSink(clock: Clock, render: EventRender): EventSink {
  return async (tx, event) => {
    if ('discussion' in event && event.discussion.state === 'spam' && event.type !== 'discussion.spam') return
    const { outbox } = tx.tables
    const endpoints = (event.listeners ?? (await listenersIn(tx, event.siteId))).webhooks
    if (endpoints.length === 0) return
    const internal = event.type === 'comment.created' && event.comment.internal
    const targets = endpoints.filter((endpoint) => eventsOf(endpoint).includes(event.type) && (!internal || endpoint.internalComments))
    if (targets.length === 0) return
    const now = new Date(clock())
    const attachments = 'comment' in event && event.files ? await attachmentsOf(tx, event.comment.id) : []
    const payload = envelope(event.type, now, render(targets[0]!.permalink, { ...event, attachments }))
    const eventId = newEventId()
    const p = sql.placeholder
    const queue = tx.prepared('webhooks_queue', (db) =>
      db.insert(outbox).values({ siteId: p('siteId'), kind: 'webhook', webhookId: p('webhookId'), eventId: p('eventId'), payload: p('payload'), nextAttemptAt: p('at'), createdAt: p('at') }).prepare('webhooks_queue'),
    )
    for (const target of targets) await queue.execute({ siteId: event.siteId, webhookId: target.id, eventId, payload, at: now })
  }
}

/** What a try of a delivery came to, as the log keeps it. */
export interface Attempt {
  webhookId: number
  outboxId: number
  eventId: string
  eventType: string
  status: number | null
  durationMs: number
  answer: string
  error: string | null
}

export function createWebhookStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { outbox, sites, webhooks, webhookDeliveries } } = port
  const now = () => new Date(clock())
  const mine = (siteId: number, id: number) => and(eq(webhooks.id, port.wide(id)), eq(webhooks.siteId, siteId))

  async function get(siteId: number, id: number): Promise<Webhook> {
    const [webhook] = await db.select().from(webhooks).where(mine(siteId, id))
    if (!webhook) throw new StoreError(`this site has no webhook ${id}`, 'not_found', 'id')
    return webhook
  }

  /** What the record of changes says of an endpoint: its settings, never its secret. */
  const shownSettings = (w: Webhook) => ({ url: w.url, description: w.description, events: w.events, enabled: w.enabled, internal_comments: w.internalComments })

  function settingsOf(settings: Partial<WebhookSettings>) {
    return {
      ...(settings.url !== undefined && { url: settings.url }),
      ...(settings.description !== undefined && { description: settings.description.trim() }),
      ...(settings.events !== undefined && { events: checkEvents(settings.events).join(' ') }),
      ...(settings.internalComments !== undefined && { internalComments: settings.internalComments }),
    }
  }

  return {
    get,

    /** The site's endpoints, oldest first. */
    list(siteId: number): Promise<Webhook[]> {
      return db.select().from(webhooks).where(eq(webhooks.siteId, siteId)).orderBy(asc(webhooks.id))
    },

    /** A new endpoint and its secret, which is shown this once (the store keeps it sealed). */
    async add(siteId: number, settings: WebhookSettings, by?: Actor): Promise<{ webhook: Webhook; secret: string }> {
      const secret = newSecret()
      const at = now()
      // Checked before the site's lock is taken: a refusal waits for no one.
      const values = settingsOf(settings)
      const webhook = await port.atomic(async (tx) => {
        // Two adds at once take turns, so the limit holds.
        await lockSite(tx, siteId)
        const [{ n }] = await tx.db.select({ n: sql<number>`count(*)` }).from(webhooks).where(eq(webhooks.siteId, siteId))
        if (Number(n) >= MAX_WEBHOOKS) throw new StoreError(`a site has at most ${MAX_WEBHOOKS} webhooks: remove one first`, 'limit')
        const [row] = await tx.db
          .insert(webhooks)
          .values({ siteId, description: '', ...values, url: settings.url, events: values.events!, enabled: settings.enabled ?? true, secret: box.seal(secret), createdAt: at, updatedAt: at })
          .returning()
        await recordChange(tx, clock, by, siteId, 'webhook.created', row!.url, shownSettings(row!))
        return row!
      })
      return { webhook, secret }
    },

    /** Changes what is given; switching an endpoint back on forgets why it was switched off. */
    async update(siteId: number, id: number, changes: Partial<WebhookSettings>, by?: Actor): Promise<Webhook> {
      const before = await get(siteId, id)
      const enabled = changes.enabled === undefined ? {} : changes.enabled ? { enabled: true, disabledReason: null, failingSince: null } : { enabled: false }
      return port.atomic(async (tx) => {
        const [row] = await tx.db.update(webhooks).set({ ...settingsOf(changes), ...enabled, updatedAt: now() }).where(mine(siteId, id)).returning()
        const difference = changedFields(shownSettings(before), shownSettings(row!))
        if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'webhook.changed', before.url, difference)
        return row!
      })
    },

    /** Removes the endpoint, its queued events and its log; whether there was one. */
    async remove(siteId: number, id: number, by?: Actor): Promise<boolean> {
      return port.atomic(async (tx) => {
        const [gone] = await tx.db.delete(webhooks).where(mine(siteId, id)).returning({ url: webhooks.url })
        if (gone) await recordChange(tx, clock, by, siteId, 'webhook.removed', gone.url)
        return gone !== undefined
      })
    },

    /** A new secret, shown this once; the one it replaces signs beside it for PREVIOUS_SECRET_MS. */
    async rotate(siteId: number, id: number, by?: Actor): Promise<{ webhook: Webhook; secret: string }> {
      const before = await get(siteId, id)
      const secret = newSecret()
      const webhook = await port.atomic(async (tx) => {
        const [row] = await tx.db
          .update(webhooks)
          .set({ secret: box.seal(secret), previousSecret: before.secret, previousUntil: new Date(clock() + PREVIOUS_SECRET_MS), updatedAt: now() })
          .where(mine(siteId, id))
          .returning()
        // That it changed, never the secret.
        await recordChange(tx, clock, by, siteId, 'webhook.secret_rotated', before.url)
        return row!
      })
      return { webhook, secret }
    },

    /** The secrets that sign its deliveries now: the current one, and the one it replaced while it still signs; null when the current one cannot be opened (another server key). */
    async secrets(webhook: Webhook): Promise<string[] | null> {
      const current = box.open(webhook.secret)
      if (current === null) return null
      const previous = webhook.previousSecret && webhook.previousUntil && webhook.previousUntil.getTime() > clock() ? box.open(webhook.previousSecret) : null
      return previous === null ? [current] : [current, previous]
    },

    /** Tells `events` of `event` in a transaction of its own: for a change another library wrote. */
    tell(events: EventSink, event: StoreEvent): Promise<void> {
      return port.atomic(async (tx) => void (await events(tx, event)))
    },

    /** The endpoint of a row of the outbox, with its site's permalink (the sender's look-up). */
    async byId(id: number): Promise<(Webhook & { permalink: string }) | undefined> {
      const [found] = await db.select({ webhook: webhooks, permalink: sites.permalink }).from(webhooks).innerJoin(sites, eq(sites.id, webhooks.siteId)).where(eq(webhooks.id, id))
      return found && { ...found.webhook, permalink: found.permalink }
    },

    /** Queues the test event for the endpoint (enabled or not): its id. */
    async queueTest(siteId: number, id: number, data: unknown): Promise<string> {
      const webhook = await get(siteId, id)
      const at = now()
      const eventId = newEventId()
      await db.insert(outbox).values({ siteId, kind: 'webhook', webhookId: webhook.id, eventId, payload: envelope(TEST_EVENT, at, data), nextAttemptAt: at, createdAt: at })
      return eventId
    },

    /** Records a try in the log. */
    async record(attempt: Attempt): Promise<void> {
      await db.insert(webhookDeliveries).values({ ...attempt, answer: attempt.answer, attemptedAt: now() })
    },

    /** The endpoint's tries of the last three days, newest first, at most `limit`. */
    deliveries(webhookId: number, limit = 100): Promise<WebhookDelivery[]> {
      return db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.webhookId, webhookId), gte(webhookDeliveries.attemptedAt, new Date(clock() - DELIVERY_LOG_MS))))
        .orderBy(desc(webhookDeliveries.id))
        .limit(limit)
    },

    /** Sends the event of a try again, now, with its id (a new row of the outbox); a StoreError when the log no longer has it. */
    async redeliver(siteId: number, webhookId: number, deliveryId: number): Promise<string> {
      const webhook = await get(siteId, webhookId)
      const [found] = await db
        .select({ eventId: webhookDeliveries.eventId, payload: outbox.payload })
        .from(webhookDeliveries)
        .innerJoin(outbox, eq(outbox.id, webhookDeliveries.outboxId))
        .where(and(eq(webhookDeliveries.id, port.wide(deliveryId)), eq(webhookDeliveries.webhookId, webhook.id)))
      if (!found) throw new StoreError(`the log of webhook ${webhookId} has no delivery ${deliveryId} (it keeps three days)`, 'not_found', 'delivery')
      const at = now()
      await db.insert(outbox).values({ siteId, kind: 'webhook', webhookId: webhook.id, eventId: found.eventId, payload: found.payload, nextAttemptAt: at, createdAt: at })
      return found.eventId
    },

    /** A delivery succeeded: the endpoint is failing no longer. */
    async succeeded(webhookId: number): Promise<void> {
      await db.update(webhooks).set({ failingSince: null }).where(and(eq(webhooks.id, webhookId), sql`${webhooks.failingSince} is not null`))
    },

    /** A try failed: since when the endpoint has been failing (now, when it was not); null when it was removed meanwhile. */
    async failed(webhookId: number): Promise<Date | null> {
      const [row] = await db
        .update(webhooks)
        .set({ failingSince: sql`coalesce(${webhooks.failingSince}, ${port.moment(now())})` })
        .where(eq(webhooks.id, webhookId))
        .returning({ failingSince: webhooks.failingSince })
      return row ? row.failingSince : null
    },

    /**
     * Switches the endpoint off with the reason, and mails its site's administrators, in one
     * transaction; nothing when it is off already (another process got there first).
     */
    async switchOff(webhookId: number, reason: string, mail: (to: string) => OutboxMail): Promise<boolean> {
      return port.atomic(async (tx) => {
        const [row] = await tx.db
          .update(webhooks)
          .set({ enabled: false, disabledReason: reason, updatedAt: now() })
          .where(and(eq(webhooks.id, webhookId), eq(webhooks.enabled, true)))
          .returning()
        if (!row) return false
        const administrators = await siteAdministrators(tx, row.siteId)
        const at = now()
        if (administrators.length > 0) {
          await tx.db.insert(outbox).values(administrators.map(({ email }) => ({ siteId: row.siteId, kind: 'webhook_disabled' as const, payload: JSON.stringify(mail(email)), nextAttemptAt: at, createdAt: at })))
        }
        // Its events still queued will not be posted: failed, with the reason.
        await tx.db.update(outbox).set({ state: 'failed', lastError: reason }).where(and(eq(outbox.webhookId, webhookId), eq(outbox.state, 'queued')))
        return true
      })
    },

    /** Forgets the tries, and the webhook rows of the outbox that ended, older than DELIVERY_LOG_MS. */
    async prune(): Promise<void> {
      const before = new Date(clock() - DELIVERY_LOG_MS)
      await db.delete(webhookDeliveries).where(lt(webhookDeliveries.attemptedAt, before))
      // An ended row goes with the last line of the log that names it ("send again" reads it).
      await db
        .delete(outbox)
        .where(and(eq(outbox.kind, 'webhook'), inArray(outbox.state, ['sent', 'failed']), lt(outbox.createdAt, before), notExists(db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(eq(webhookDeliveries.outboxId, outbox.id)))))
    },
  }
}

export type WebhookStore = ReturnType<typeof createWebhookStore>
