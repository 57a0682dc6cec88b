import { and, count, eq, gt, isNull } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { CUSTOMER_LINK_PREFIX, generateToken } from '../../lib/token-format.ts'
import type { LinkPurpose } from '../values.ts'
import { createAuthors } from './discussion-authors.ts'
import { createDiscussionIn } from './discussions.ts'
import { noEvents, type EventSink } from './webhooks.ts'
import { queueCustomerMail, type OutboxMail } from './outbox.ts'
import { activeFieldsIn, shapeOf, type FieldValues } from './fields.ts'
import { stillTaken } from '../../lib/fields.ts'
import { isStaffRole } from './staff.ts'
import { findUserByEmail, roleOn } from './users.ts'

// The links mailed to a customer (docs/decisions.md, "The customer's side"): one that signs a
// customer in, and one that posts the discussion a visitor wrote; and the one a supporter who forgot
// their password is mailed (docs/decisions.md, "A forgotten password"). Each is asked for and queued in
// one transaction (the link's row and its mail in the outbox), valid LINK_MINUTES, followed once,
// for its site only, and kept as a keyed digest: a copy of the database cannot follow one.

/** How long a mailed link can be followed. */
export const LINK_MINUTES = 15
/** How many links one address (email) may be sent, and one client address may ask for, in LIMIT_WINDOW_MINUTES. */
export const LINKS_PER_EMAIL = 5
export const LINKS_PER_ADDRESS = 20
export const LIMIT_WINDOW_MINUTES = 60

/** What a visitor wrote, kept sealed until their link is followed. */
export interface PendingDiscussion {
  name: string
  title: string
  body: string
  categoryId: number
  public: boolean
  /** Its values of the fields shown to customers (issue 72), as checked when it was written. */
  fields?: FieldValues
}

export type LinkAsked = { kind: 'queued' } | { kind: 'limited'; retryAfter: number }

export type LinkFollowed =
  | { kind: 'invalid' }
  | { kind: 'expired' }
  | { kind: 'used' }
  | { kind: 'signed_in'; userId: number }
  /** The discussion the link posted (now or at an earlier follow), and who to sign in: its author, when a customer. */
  | { kind: 'posted'; number: number; userId: number | null; again: boolean }

export function createCustomerLinkStore(port: StorePort, clock: Clock, box: SecretBox, events: EventSink = noEvents) {
  const { db, tables: { customerLinks, discussions } } = port
  const authorOf = createAuthors(clock, box)

  /** Seconds until the oldest of the links counted against a limit leaves the window. */
  async function limited(siteId: number, email: string, address: string): Promise<number | null> {
    const since = new Date(clock() - LIMIT_WINDOW_MINUTES * 60_000)
    const [byEmail] = await db.select({ n: count() }).from(customerLinks).where(and(eq(customerLinks.siteId, siteId), eq(customerLinks.email, email), gt(customerLinks.createdAt, since)))
    const [byAddress] = await db.select({ n: count() }).from(customerLinks).where(and(eq(customerLinks.address, address), gt(customerLinks.createdAt, since)))
    if (Number(byEmail!.n) < LINKS_PER_EMAIL && Number(byAddress!.n) < LINKS_PER_ADDRESS) return null
    return LIMIT_WINDOW_MINUTES * 60
  }

  /** The customer of the site with this address, who may sign in by a link: not its staff, not disabled. */
  async function customerOf(tx: StorePort, siteId: number, email: string) {
    const user = await findUserByEmail(tx, email)
    if (!user || user.disabled) return undefined
    const role = await roleOn(tx, siteId, user.id)
    return role && !isStaffRole(role) ? user : undefined
  }

  /** The support staff member of the site with this address, who may set a forgotten password: not disabled. */
  async function supporterOf(tx: StorePort, siteId: number, email: string) {
    const user = await findUserByEmail(tx, email)
    if (!user || user.disabled) return undefined
    return isStaffRole(await roleOn(tx, siteId, user.id)) ? user : undefined
  }

  /** Whether a link of the purpose goes by mail to the address: a visitor's discussion always; a sign-in to a customer, a password's to a supporter. */
  const mailedTo = async (tx: StorePort, siteId: number, purpose: LinkPurpose, email: string) =>
    purpose === 'discussion' || (await personOf(tx, siteId, purpose, email)) !== undefined

  /** Who a link of a person is for: a customer to sign in or to have their data; a supporter to set a password. */
  const personOf = (tx: StorePort, siteId: number, purpose: LinkPurpose, email: string) => (purpose === 'password_reset' ? supporterOf(tx, siteId, email) : customerOf(tx, siteId, email))

  const OUTBOX_KIND = { sign_in: 'sign_in_link', discussion: 'confirmation', password_reset: 'password_reset', data_export: 'data_export' } as const

  return {
    /**
     * A new link for `email` on the site, and its mail queued with it: `mail` writes the mail
     * around the link's value. A sign-in link for an address that is no customer of the site (a
     * password's for one that is none of its supporters) is written all the same (so the answer and its time do not tell which addresses are known, and
     * it counts against the limits) but no mail goes. Past a limit, nothing is written.
     */
    ask(input: {
      siteId: number
      purpose: LinkPurpose
      email: string
      address: string
      pending?: PendingDiscussion
      mail: (value: string, siteName: string) => Pick<OutboxMail, 'subject' | 'text'>
    }): Promise<LinkAsked> {
      const email = input.email.trim()
      return port.atomic(async (tx) => {
        const retryAfter = await limited(input.siteId, email, input.address)
        if (retryAfter !== null) return { kind: 'limited', retryAfter }
        const value = generateToken(CUSTOMER_LINK_PREFIX)
        const now = new Date(clock())
        await tx.db.insert(customerLinks).values({
          siteId: input.siteId,
          purpose: input.purpose,
          email,
          digest: box.digest(value),
          payload: input.pending ? box.seal(JSON.stringify(input.pending)) : null,
          address: input.address,
          expiresAt: new Date(now.getTime() + LINK_MINUTES * 60_000),
          createdAt: now,
        })
        if (await mailedTo(tx, input.siteId, input.purpose, email)) {
          await queueCustomerMail(tx, clock, box, {
            siteId: input.siteId,
            kind: OUTBOX_KIND[input.purpose],
            mail: (siteName) => ({ to: email, ...input.mail(value, siteName) }),
          })
        }
        return { kind: 'queued' }
      })
    },

    /**
     * Follows a link of the site, once: a sign-in link names the customer to sign in; a discussion's
     * link posts it (by its address's account, made a customer of the site when new) and names it
     * again at a later follow, so following it twice makes one discussion. Another site's link, a
     * changed one, or one past LINK_MINUTES is refused.
     */
    follow(siteId: number, purpose: LinkPurpose, value: string): Promise<LinkFollowed> {
      return port.atomic(async (tx): Promise<LinkFollowed> => {
        const [link] = await tx.db
          .select()
          .from(customerLinks)
          .where(and(eq(customerLinks.digest, box.digest(value)), eq(customerLinks.siteId, siteId), eq(customerLinks.purpose, purpose)))
        if (!link) return { kind: 'invalid' }
        const now = new Date(clock())
        // Marked used first, under the row's lock: of two follows at once, the second waits here and then finds it used.
        const taken = await tx.db
          .update(customerLinks)
          .set({ usedAt: now })
          .where(and(eq(customerLinks.id, link.id), isNull(customerLinks.usedAt), gt(customerLinks.expiresAt, now)))
          .returning({ id: customerLinks.id })
        if (taken.length === 0) return again(tx, link.id)
        if (purpose !== 'discussion') {
          // Who the link is for, as they are now: a customer to sign in or to have their data, a supporter to set a password.
          const user = await personOf(tx, siteId, purpose, link.email)
          return user ? { kind: 'signed_in', userId: user.id } : { kind: 'invalid' }
        }
        const known = await findUserByEmail(tx, link.email)
        if (known?.disabled) return { kind: 'invalid' }
        const pending = JSON.parse(box.open(link.payload!) ?? 'null') as PendingDiscussion | null
        if (!pending) return { kind: 'invalid' }
        const { discussion } = await createDiscussionIn(tx, clock, authorOf, {
          siteId,
          categoryId: pending.categoryId,
          title: pending.title,
          body: pending.body,
          public: pending.public,
          via: 'web',
          supporterId: 0,
          onBehalfOf: { email: link.email, name: pending.name },
          fields: await stillAsked(tx, siteId, pending.fields ?? {}),
        }, events)
        await tx.db.update(customerLinks).set({ discussionId: discussion.id, payload: null }).where(eq(customerLinks.id, link.id))
        return { kind: 'posted', number: discussion.number, userId: await signInAs(tx, siteId, discussion.authorId), again: false }
      })
    },
  }

  /**
   * The values a visitor gave that their fields take still, when the link is followed (up to
   * LINK_MINUTES later): a field removed since, or no longer shown to customers, or whose choices
   * changed so that the value is not one, is left out rather than the message lost.
   */
  async function stillAsked(tx: StorePort, siteId: number, given: FieldValues): Promise<FieldValues> {
    const asked = (await activeFieldsIn(tx, siteId)).filter((f) => f.audience === 'customers')
    return stillTaken(asked.map(shapeOf), given) as FieldValues
  }

  /** A link that could not be taken: used already (a posted discussion is named again), or past its time. */
  async function again(tx: StorePort, id: number): Promise<LinkFollowed> {
    const [link] = await tx.db
      .select({ usedAt: customerLinks.usedAt, number: discussions.number })
      .from(customerLinks)
      .leftJoin(discussions, eq(discussions.id, customerLinks.discussionId))
      .where(eq(customerLinks.id, id))
    if (link!.number !== null) return { kind: 'posted', number: link!.number, userId: null, again: true }
    return link!.usedAt !== null ? { kind: 'used' } : { kind: 'expired' }
  }

  /** Who a followed link signs in: the author, when a customer of the site (staff sign in with their password). */
  async function signInAs(tx: StorePort, siteId: number, userId: number): Promise<number | null> {
    const role = await roleOn(tx, siteId, userId)
    return role && !isStaffRole(role) ? userId : null
  }
}

export type CustomerLinkStore = ReturnType<typeof createCustomerLinkStore>
