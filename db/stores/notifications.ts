import { and, eq, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import { shownMoment, type Clock } from '../../lib/clock.ts'
import { promiseNames, type SlaAlert } from '../../lib/sla.ts'
import { fromOf, siteMailbox, type OutboxMail } from './outbox.ts'
import { answeringStaff, enabledUser } from './staff.ts'

// What the staff is mailed about the queue (docs/decisions.md, "The team's queue"), each supporter
// choosing on their profile: every new discussion of the site, and what others write on the
// discussions they own (and a discussion given to them by someone else). Queued in the outbox in
// the transaction of the change, so a notification leaves exactly when its cause commits.

/** What a supporter of a site is mailed about. */
export interface NotificationChoice {
  /** Every new discussion of the site, but their own. */
  newDiscussions: boolean
  /** Comments of others on the discussions they own, and a discussion given to them by someone else. */
  owned: boolean
  /** The weekly digest of the reports (issue 69), for the site's administrators. */
  digest: boolean
}

/** The most characters of a comment a notification quotes. */
export const QUOTED_CHARS = 2_000

interface About {
  siteId: number
  number: number
  title: string
}

const quoted = (text: string) => (text.length <= QUOTED_CHARS ? text : `${text.slice(0, QUOTED_CHARS)}…`)

/** A supporter a notification goes to. */
export interface Recipient {
  email: string
  id: number
}

/**
 * Queues a mail to each recipient: from the site's first mailbox, answerable by mail (each
 * recipient's reply address, lib/reply-address.ts), when the site has one; else from the service.
 */
async function queue(port: StorePort, clock: Clock, about: About, recipients: Recipient[], mail: (site: string) => Pick<OutboxMail, 'subject' | 'text'>) {
  if (recipients.length === 0) return
  const { site, mailbox } = await siteMailbox(port, about.siteId)
  const at = new Date(clock())
  const page = { site: site.permalink, number: about.number, staff: true }
  const from = mailbox && { from: fromOf(site.name, mailbox.address), mailboxId: mailbox.id }
  const rows = recipients.map(({ email, id }) => ({
    siteId: about.siteId,
    kind: 'notification' as const,
    payload: JSON.stringify({
      to: email,
      ...mail(site.name),
      ...from,
      ...(mailbox && { answerable: { siteId: about.siteId, mailbox: mailbox.address, number: about.number, userId: id } }),
      page,
      automatic: true,
    } satisfies OutboxMail),
    nextAttemptAt: at,
    createdAt: at,
  }))
  await port.db.insert(port.tables.outbox).values(rows)
}

/**
 * The addresses of the site's supporters whose accounts are on and who chose `choice`, by one
 * statement prepared once per port: every one of them, or the one `userId` names.
 */
function recipients(port: StorePort, choice: 'notifyNew' | 'notifyOwned', one: boolean) {
  const { memberships, sites, users } = port.tables
  const p = sql.placeholder
  const name = `notifications_${choice}_${one ? 'one' : 'all'}`
  // A supporter who has not chosen whether to hear of new discussions hears as the site says.
  const chose = choice === 'notifyNew' ? sql`coalesce(${memberships.notifyNew}, ${sites.newDiscussionsToTeam})` : eq(memberships.notifyOwned, true)
  return port.prepared(name, (db) =>
    db
      .select({ email: users.email, id: users.id })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .innerJoin(sites, eq(sites.id, memberships.siteId))
      .where(and(eq(memberships.siteId, p('siteId')), answeringStaff(memberships), chose, enabledUser(users), one ? eq(memberships.userId, port.wide(p('userId'))) : undefined))
      .prepare(name),
  )
}

/**
 * Who hears of new discussions: the site's supporters who asked for every one. Read by a create
 * before it takes the site's row (db/stores/discussions.ts), which leaves its author out.
 */
export function hearsOfNew(port: StorePort, siteId: number): Promise<Recipient[]> {
  return recipients(port, 'notifyNew', false).execute({ siteId })
}

/** A new discussion, to those who hear of it (hearsOfNew, its author aside). */
export async function notifyNewDiscussion(port: StorePort, clock: Clock, told: Recipient[], about: About & { authorName: string; body: string }): Promise<void> {
  await queue(port, clock, about, told, (site) => ({
    subject: `[${site}] New discussion #${about.number}: ${about.title}`,
    text: `${about.authorName} started a discussion on ${site}:\n\n${quoted(about.body)}`,
  }))
}

/** The owner of the discussion, when they are staff of its site and asked to hear of it; never the person acting. */
async function ownerToTell(port: StorePort, siteId: number, ownerId: number, actorId: number): Promise<Recipient[]> {
  if (ownerId === actorId) return []
  return recipients(port, 'notifyOwned', true).execute({ siteId, userId: ownerId })
}

/** A comment on a discussion someone owns, to its owner (unless they wrote it). */
export async function notifyOwnerOfComment(
  port: StorePort,
  clock: Clock,
  about: About & { ownerId: number; authorId: number; authorName: string; body: string; internal: boolean },
): Promise<void> {
  const recipients = await ownerToTell(port, about.siteId, about.ownerId, about.authorId)
  const what = about.internal ? 'added an internal note to' : 'replied on'
  await queue(port, clock, about, recipients, (site) => ({
    subject: `[${site}] ${about.internal ? 'Note' : 'Reply'} on #${about.number}: ${about.title}`,
    text: `${about.authorName} ${what} a discussion you own:\n\n${quoted(about.body)}`,
  }))
}

/** A discussion given to someone by someone else (or by the site's turn: actorId null). */
export async function notifyAssigned(port: StorePort, clock: Clock, about: About & { ownerId: number; actorId: number | null; actorName: string | null }): Promise<void> {
  const recipients = await ownerToTell(port, about.siteId, about.ownerId, about.actorId ?? 0)
  await queue(port, clock, about, recipients, (site) => ({
    subject: `[${site}] #${about.number} is yours: ${about.title}`,
    text: about.actorName === null ? `Discussion #${about.number} of ${site} was given to you in turn.` : `${about.actorName} gave you discussion #${about.number} of ${site}.`,
  }))
}

/**
 * An SLA warning or breach (issue 68): to the owner when someone owns the discussion (and asked to
 * hear of what they own), else to the supporters who hear of every new discussion: the team.
 */
export async function notifySla(port: StorePort, clock: Clock, about: About & { ownerId: number | null; alert: SlaAlert }): Promise<void> {
  const told = about.ownerId === null ? await recipients(port, 'notifyNew', false).execute({ siteId: about.siteId }) : await ownerToTell(port, about.siteId, about.ownerId, 0)
  const promise = promiseNames[about.alert.kind]
  const due = shownMoment(about.alert.due)
  await queue(port, clock, about, told, (site) =>
    about.alert.alert === 'warning'
      ? { subject: `[${site}] #${about.number} is due soon (${promise}): ${about.title}`, text: `The ${promise} promised on discussion #${about.number} of ${site} is due at ${due}.` }
      : { subject: `[${site}] #${about.number} missed its ${promise}: ${about.title}`, text: `The ${promise} promised on discussion #${about.number} of ${site} was due at ${due}.` },
  )
}

/**
 * A rule's "notify" (issue 70; db/stores/rules.ts): to its owner (when someone owns it and asked to
 * hear of what they own), to the team (those who hear of every new discussion), or to one supporter
 * of the site, whatever they chose: a rule naming them is their administrator's choice.
 */
export async function notifyByRule(port: StorePort, clock: Clock, about: About & { to: 'owner' | 'team' | number; ownerId: number | null; rule: string }): Promise<void> {
  const told =
    about.to === 'team'
      ? await recipients(port, 'notifyNew', false).execute({ siteId: about.siteId })
      : about.to === 'owner'
        ? about.ownerId === null
          ? []
          : await ownerToTell(port, about.siteId, about.ownerId, 0)
        : await staffMember(port).execute({ siteId: about.siteId, userId: about.to })
  await queue(port, clock, about, told, (site) => ({
    subject: `[${site}] #${about.number}: ${about.title}`,
    text: `The rule "${about.rule}" of ${site} asks you to look at discussion #${about.number}.`,
  }))
}

/** A supporter of the site whose account is on, by id. */
function staffMember(port: StorePort) {
  const { memberships, users } = port.tables
  const p = sql.placeholder
  return port.prepared('notifications_staff_member', (db) =>
    db
      .select({ email: users.email, id: users.id })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.siteId, p('siteId')), answeringStaff(memberships), enabledUser(users), eq(memberships.userId, port.wide(p('userId')))))
      .prepare('notifications_staff_member'),
  )
}
