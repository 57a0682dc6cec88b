import { createWriteStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { OPERATOR } from '../db/stores/audit.ts'
import { eraseCustomer, MAX_RETENTION_MONTHS, type ErasurePlan } from '../db/stores/erasure.ts'
import { erasureModes, type ErasureMode } from '../db/values.ts'
import { exportZip } from '../lib/customer-export.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// A customer's data on the command line (issue 74; docs/decisions.md, "A customer's data on
// request"): the ZIP an administrator exports on the API, written to a file the operator names;
// a customer's erasure (a dry run first); the site's privacy settings (erasure, retention).

/** What an erasure does, in words: the dry run's answer. */
const planText = (plan: ErasurePlan) =>
  `${plan.customer.email}: ${plan.discussions} discussions they started (${MODE_WORDS[plan.mode]}), ` +
  `${plan.others} others they wrote in or were copied on, ${plan.comments} comments, ${plan.files} files, ${plan.mails} mails; their account ${ACCOUNT_WORDS[plan.account]}\n`
const MODE_WORDS: Record<ErasurePlan['mode'], string> = { delete: 'deleted', anonymise: 'kept anonymised' }
const ACCOUNT_WORDS: Record<ErasurePlan['account'], string> = { kept: 'kept for their other sites', removed: 'removed' }

export const customerCommands: Command[] = [
  admin(
    {
      words: ['customer', 'export'],
      args: ['<site>', '<email>', '<file>'],
      usage: 'customer export <site> <email> <file.zip>',
      summary: "Everything the site holds of one customer, as a ZIP of JSON and their files, written to <file.zip> (created, never overwritten): what they could see of their discussions, never an internal note or another customer's text. Recorded in the site's record of changes.",
      atomic: false,
    },
    async ({ sites, users, customerData, files }, [permalink, email, file], _values, io) => {
      const site = await sites.get(permalink!)
      const account = await users.find(email!)
      const data = account && (await customerData.exportOf(site.id, account.id))
      if (!data) throw new UsageError(`${email} is no customer of ${site.permalink}`)
      await customerData.recordExport(site.id, data.account.email, OPERATOR)
      await pipeline(await exportZip(site.name, data, (fileId, seq) => files.piece(fileId, seq), new Date(io.clock())), createWriteStream(file!, { flags: 'wx' }))
      io.stdout(`${file}: ${data.discussions.length} discussions and ${data.files.length} files of ${data.account.email}\n`)
    },
  ),
  admin(
    {
      words: ['customer', 'erase'],
      args: ['<site>', '<email>'],
      usage: 'customer erase <site> <email> [--dry-run]',
      summary: "Erases a customer of the site at their request: their discussions deleted or kept anonymised (the site's choice, `site privacy`), their part of the others taken out, their files, mails, links and account gone (kept for their other sites). A few discussions a transaction. Recorded in the site's record of changes.",
      options: { 'dry-run': { type: 'boolean', about: 'only say what it would do' } },
      atomic: false,
    },
    async ({ sites, users, erasure }, [permalink, email], values, io) => {
      const site = await sites.get(permalink!)
      const account = await users.find(email!)
      const plan = account && (await erasure.plan(site.id, account.id))
      if (!plan) throw new UsageError(`${email} is no customer of ${site.permalink}`)
      if (values['dry-run']) return io.stdout(`would erase ${planText(plan)}`)
      await eraseCustomer(erasure, site.id, account.id, OPERATOR)
      io.stdout(`erased ${planText(plan)}`)
    },
  ),
  admin(
    {
      words: ['site', 'privacy'],
      args: ['<site>'],
      usage: 'site privacy <site> [--erasure anonymise|delete] [--retention-months N|off]',
      summary: "Shows or sets the site's privacy settings: what erasing a customer does to the discussions they started, and after how many months its resolved discussions are deleted; with how many the retention would delete now.",
      options: {
        erasure: { type: 'string', value: erasureModes.join('|'), about: 'what erasing a customer does to the discussions they started' },
        'retention-months': { type: 'string', value: 'N|off', about: `resolved discussions are deleted N months (1 to ${MAX_RETENTION_MONTHS}) after their last activity; off keeps them` },
      },
      atomic: false,
    },
    async ({ sites, erasure }, [permalink], values, io) => {
      const site = await sites.get(permalink!)
      const mode = values.erasure as string | undefined
      if (mode !== undefined && !(erasureModes as readonly string[]).includes(mode)) throw new UsageError(`--erasure must be ${erasureModes.join(' or ')}`)
      const months = values['retention-months'] as string | undefined
      if (months !== undefined && months !== 'off' && !(/^\d{1,3}$/.test(months) && Number(months) >= 1 && Number(months) <= MAX_RETENTION_MONTHS)) throw new UsageError(`--retention-months must be off or a whole number from 1 to ${MAX_RETENTION_MONTHS}`)
      const settings = await erasure.setSettings(site.id, { erasureMode: mode as ErasureMode | undefined, retentionMonths: months === undefined ? undefined : months === 'off' ? null : Number(months) }, OPERATOR)
      const due = await erasure.retentionDue(site.id)
      io.stdout(`erasure: ${settings.erasureMode}\nretention: ${settings.retentionMonths === null ? 'off' : `${settings.retentionMonths} months (${due} discussions due now)`}\n`)
    },
  ),
]
