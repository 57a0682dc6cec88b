import { shown } from '../lib/terminal-text.ts'
import { OPERATOR } from '../db/stores/audit.ts'
import { invitationMail, ROLE_WORDS } from '../routes/team.ts'
import type { StaffRole } from '../db/values.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// Invitations to a site's staff on the command line (docs/decisions.md, "Invitations"), as
// Administration -> Team and the API have them: the mail is queued in the outbox, which the running
// service sends (SERVICE_SMTP_URL); the link works once, for 7 days.

const idOf = (value: string | undefined) => {
  if (!/^[1-9]\d{0,9}$/.test(value ?? '')) throw new UsageError(`an invitation id is a number, not "${value}"`)
  return Number(value)
}

export const invitationCommands: Command[] = [
  admin(
    {
      words: ['invitation', 'add'],
      args: ['<site>', '<email>'],
      options: {
        administrator: { type: 'boolean', about: 'invite them as an administrator of the site, not a supporter' },
        collaborator: { type: 'boolean', about: 'invite them as a collaborator: reads the discussions, writes internal notes only' },
      },
      usage: 'invitation add <site> <email> [--administrator | --collaborator]',
      summary: "Invite an address to the site's staff: a mail with a link that works once, for 7 days (sent by the running service); an open invitation of the address is replaced.",
    },
    async ({ sites, invitations, urls }, [permalink, email], values, io) => {
      const site = await sites.get(permalink!)
      if (values.administrator === true && values.collaborator === true) throw new UsageError('choose one role: --administrator or --collaborator')
      const role: StaffRole = values.administrator === true ? 'administrator' : values.collaborator === true ? 'collaborator' : 'supporter'
      const invited = await invitations.invite(site.id, { email: email!, role, invitedBy: null }, invitationMail(urls, site.permalink, null, role), OPERATOR)
      io.stdout(`invitation ${invited.id}: ${invited.email} invited to ${site.permalink} ${ROLE_WORDS[role]}; its mail is queued, and its link works until ${invited.expiresAt.toISOString()}\n`)
    },
  ),
  admin(
    {
      words: ['invitation', 'list'],
      args: ['<site>'],
      usage: 'invitation list <site>',
      summary: 'One line per open invitation of the site, newest first: its id, address, role, who invited, and until when its link works.',
      atomic: false,
    },
    async ({ sites, invitations }, [permalink], _values, io) => {
      const site = await sites.get(permalink!)
      for (const i of await invitations.open(site.id)) {
        io.stdout(`${[i.id, i.email, i.role, i.invitedBy ?? '-', i.expiresAt.toISOString()].map((field) => shown(String(field))).join('\t')}\n`)
      }
    },
  ),
  admin(
    {
      words: ['invitation', 'withdraw'],
      args: ['<site>', '<id>'],
      usage: 'invitation withdraw <site> <id>',
      summary: 'Withdraw an open invitation (its id from `invitation list`): its link stops working.',
    },
    async ({ sites, invitations }, [permalink, id], _values, io) => {
      const site = await sites.get(permalink!)
      if (!(await invitations.withdraw(site.id, idOf(id), OPERATOR))) throw new UsageError(`${site.permalink} has no open invitation ${id}`)
      io.stdout(`invitation ${id} of ${site.permalink} withdrawn\n`)
    },
  ),
]
