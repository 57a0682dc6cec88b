import { senderVerdicts, type SenderVerdict } from '../db/values.ts'
import type { SenderRule } from '../db/stores/senders.ts'
import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// What a site says of senders on the command line (docs/decisions.md, "Spam"), as the API has it:
// an address or a domain (with its subdomains) whose mail is never spam (allow) or always is (block).

const line = (rule: SenderRule) => [rule.id, rule.verdict, rule.pattern, rule.createdAt.toISOString()].map((field) => shown(String(field))).join('\t')

/** `sender allow` and `sender block`: the same command, but for the verdict. */
const setting = (verdict: SenderVerdict): Command =>
  admin(
    {
      words: ['sender', verdict],
      args: ['<site>', '<address-or-domain>'],
      usage: `sender ${verdict} <site> <address-or-domain>`,
      summary:
        verdict === 'allow'
          ? "Never take this address's or domain's mail for spam (a domain covers its subdomains); replaces a rule the site had for it."
          : "Take every mail from this address or domain (and its subdomains) for spam; replaces a rule the site had for it.",
    },
    async (stores, [permalink, pattern], _values, io) => {
      const site = await stores.sites.get(permalink!)
      io.stdout(`${line(await stores.senders.set(site.id, pattern!, verdict))}\n`)
    },
  )

export const senderCommands: Command[] = [
  admin(
    {
      words: ['sender', 'list'],
      args: ['<site>'],
      usage: 'sender list <site>',
      summary: `One line per sender rule of the site, by pattern: its id, verdict (${senderVerdicts.join(' or ')}), pattern, and when it was set.`,
      atomic: false,
    },
    async ({ sites, senders }, [permalink], _values, io) => {
      const site = await sites.get(permalink!)
      for (const rule of await senders.list(site.id)) io.stdout(`${line(rule)}\n`)
    },
  ),
  ...senderVerdicts.map(setting),
  admin(
    {
      words: ['sender', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'sender remove <site> <id>',
      summary: 'Remove a sender rule (its id from `sender list`).',
    },
    async (stores, [permalink, id], _values, io) => {
      const site = await stores.sites.get(permalink!)
      if (!/^[1-9]\d{0,9}$/.test(id!)) throw new UsageError(`a sender rule id is a number, not "${id}"`)
      await stores.senders.remove(site.id, Number(id))
      io.stdout(`sender rule ${id} of ${site.permalink} removed\n`)
    },
  ),
]
