import type { FastifyInstance } from 'fastify'
import { INVITATION_DAYS } from '../db/stores/invitations.ts'
import { StoreError } from '../db/stores/errors.ts'
import type { Urls } from '../lib/urls.ts'
import { endGrants } from '../plugins/oauth/adapter.ts'
import type { StaffRole } from '../db/values.ts'
import type { Actor } from '../db/stores/audit.ts'

// What the team page (routes/web/admin-team.ts) and the API (routes/api/team.ts) share: the mail of
// an invitation, and a change to someone of the staff (docs/decisions.md, "Invitations").

/** What each role is, in a sentence's end: the invitation's mail and page, the team page. */
export const ROLE_WORDS: Record<StaffRole, string> = {
  administrator: 'as an administrator (who also runs the site)',
  supporter: 'as a supporter',
  collaborator: 'as a collaborator (who reads the discussions and writes internal notes)',
}

/** Each role's name, as the team page shows it. */
export const ROLE_NAMES: Record<StaffRole, string> = { administrator: 'Administrator', supporter: 'Supporter', collaborator: 'Collaborator' }

/** The mail of an invitation: who invites, to what, and the link. */
export function invitationMail(urls: Urls, permalink: string, inviter: string | null, role: StaffRole) {
  return (value: string, siteName: string) => ({
    subject: `You are invited to ${siteName}'s support team`,
    text: [
      `${inviter ?? 'An administrator'} invites you to the support staff of ${siteName}, ${ROLE_WORDS[role]}. Open this link within ${INVITATION_DAYS} days to join:`,
      `${urls.siteWeb(permalink)}/invitation/${value}`,
      'It works once. If you did not expect it, ignore this mail.',
    ].join('\n\n'),
  })
}

export type StaffChange = StaffRole | 'remove'

/**
 * Makes someone of the site's staff its administrator, a supporter, a collaborator, or no longer staff (a customer,
 * who keeps what they wrote), as an administrator `by`: never themselves (another administrator
 * does it, so a site always keeps one). What the role no longer allows ends at once, because every
 * request reads the role: pages and tokens of a removed supporter are refused from their next
 * request, in any process; their applications' grants on the site end, so coming back asks for
 * consent again. Written in the person's security log. A StoreError for someone not on the staff.
 */
export async function changeStaff(fastify: FastifyInstance, site: { id: number; permalink: string }, userId: number, change: StaffChange, by: Actor & { id: number }): Promise<boolean> {
  const { users, securityLog, oauthRecords } = fastify
  if (userId === by.id) throw new StoreError('you cannot change your own role: another administrator does', 'forbidden', 'user')
  if (!(await users.isStaff(site.id, userId))) throw new StoreError('there is nobody of that id on the staff of this site', 'not_found', 'user')
  const log = (kind: 'administrator_added' | 'administrator_removed' | 'staff_removed' | 'role_changed', detail?: Record<string, string | number>) =>
    securityLog.append({ userId, siteId: site.id, kind, address: by.address, actor: 'administrator', detail: { by: by.name, ...detail } })
  if (change === 'remove') {
    await users.removeStaff(site.id, userId, { keepAnAdministrator: true, by })
    const person = await users.byId(userId)
    if (person) await fastify.invitations.withdrawFor(site.id, person.email)
    const ended = await endGrants(oauthRecords, userId, site.permalink)
    await log('staff_removed', { authorizations_ended: ended })
    return true
  }
  const before = await users.staffRole(site.id, userId)
  const changed = await users.setStaffRole(site.id, userId, change, by)
  if (changed) await log(change === 'administrator' ? 'administrator_added' : before === 'administrator' ? 'administrator_removed' : 'role_changed', { from: before!, to: change })
  return changed
}
