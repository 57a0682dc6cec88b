import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import type { Command } from './command.ts'
import { describeEvent } from '../routes/web/security-log.ts'

// service-desk security-log <site> [--user email] [--json]: the security log of a site's people
// for administrators (issue 18; docs/decisions.md, "Token lifecycle"), newest first.

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
]
