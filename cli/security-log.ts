import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'
import { AUDIT_THINGS, auditActions } from '../db/stores/audit.ts'
import { auditLine } from '../routes/api/audit-log.ts'
import { shownDetail } from '../routes/web/admin-record.ts'
import { describeEvent } from '../routes/web/security-log.ts'

// service-desk security-log <site> [--user email] [--json]: the security log of a site's people
// for administrators (issue 18; docs/decisions.md, "Token lifecycle"), newest first; and
// service-desk audit <site>: the site's record of changes (issue 67; "The record of changes").

export const SECURITY_LOG_LIMIT = 1_000

export const securityLogCommands: Command[] = [
  admin(
    {
      words: ['security-log'],
      args: ['<site>'],
      options: {
        user: { type: 'string', value: 'EMAIL', about: "one person's events, on every site" },
        json: { type: 'boolean', about: 'one JSON array, with the event kinds as codes, for scripts' },
      },
      usage: 'security-log <site> [--user EMAIL] [--json]',
      summary: `The security log of the site (token created, revoked, used from a new address, sign-ins, lockouts, staff changes), newest first, the latest ${SECURITY_LOG_LIMIT} events; --user: one person's, on every site.`,
      atomic: false,
    },
    async ({ sites, users, securityLog }, [permalink], values, io) => {
      const site = await sites.get(permalink)
      const email = values.user as string | undefined
      const user = email === undefined ? undefined : await users.get(email)
      // The site's own events and its people's account-wide ones (a password set at the command line).
      const { events } = await securityLog.list({ ofSite: user ? undefined : site.id, userId: user?.id, offset: 0, limit: SECURITY_LOG_LIMIT })
      if (values.json === true) {
        const rows = events.map((e) => ({
          at: e.createdAt.toISOString(),
          kind: e.kind,
          user_id: e.userId,
          site_id: e.siteId,
          address: e.address,
          actor: e.actor,
          detail: e.detail,
        }))
        io.stdout(`${JSON.stringify(rows)}\n`)
        return
      }
      // People by their email, kinds in the page's words, times in the page's format.
      const emails = new Map<number | null, string>([[null, '-']])
      // An account is never deleted, so every event of an account names one; the site's own have none.
      for (const id of new Set(events.map((e) => e.userId))) if (id !== null) emails.set(id, (await users.byId(id))!.email)
      for (const event of events) {
        const line = describeEvent(event)
        io.stdout(`${[line.when, emails.get(event.userId)!, line.what, line.from || '-', line.by || '-', line.details].map(shown).join('\t')}\n`)
      }
    },
  ),
  admin(
    {
      words: ['audit'],
      args: ['<site>'],
      options: {
        action: { type: 'string', value: 'THING', about: `only changes of one kind of thing (${AUDIT_THINGS.join(', ')}) or one action (team.invited, ...)` },
        json: { type: 'boolean', about: 'one JSON array, as the API gives it, for scripts' },
      },
      usage: 'audit <site> [--action THING] [--json]',
      summary: `The site's record of changes (team, roles, invitations, categories, policy, mailboxes, webhooks, saved replies, discussions deleted or restored): who, when, from where, what changed; newest first, the latest ${SECURITY_LOG_LIMIT}.`,
      atomic: false,
    },
    async ({ sites, securityLog }, [permalink], values, io) => {
      const site = await sites.get(permalink)
      const action = values.action as string | undefined
      if (action !== undefined && !AUDIT_THINGS.includes(action) && !(auditActions as readonly string[]).includes(action)) throw new UsageError(`--action takes one of ${AUDIT_THINGS.join(', ')}, or an action such as team.invited`)
      const entries = await securityLog.changes({ siteId: site.id, action, limit: SECURITY_LOG_LIMIT })
      if (values.json === true) {
        io.stdout(`${JSON.stringify(entries.map(auditLine))}\n`)
        return
      }
      for (const e of entries) {
        io.stdout(`${[e.createdAt.toISOString(), e.actor, e.via, e.address ?? '-', e.action, e.target, shownDetail(e.detail).join('; ') || '-'].map(shown).join('\t')}\n`)
      }
    },
  ),
]
