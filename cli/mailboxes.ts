import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// The sites' mailboxes on the command line (docs/decisions.md, "Mail"): the addresses a site takes
// mail at, through the built-in receiver (SERVICE_MAIL_RECEIVER).

export const mailboxCommands: Command[] = [
  admin(
    {
      words: ['mailbox', 'add'],
      args: ['<site>', '<address>'],
      options: { category: { type: 'string', value: 'ID', about: "the category its mail opens discussions in; the site's first by default" } },
      usage: 'mailbox add <site> <address> [--category ID]',
      summary: "Take the site's mail at an address: mail to it opens discussions, and answers to them join theirs.",
    },
    async ({ sites, mailboxes }, [permalink, address], values, io) => {
      const site = await sites.get(permalink)
      const category = values.category === undefined ? null : Number(values.category)
      if (category !== null && !/^[1-9]\d{0,9}$/.test(String(values.category))) throw new UsageError(`--category must be a category id, not "${values.category}"`)
      const mailbox = await mailboxes.addMailbox(site.id, address, category)
      io.stdout(`mailbox ${mailbox.address} added to ${site.permalink}${category === null ? '' : ` (category ${category})`}; mail reaches it through the receiver (SERVICE_MAIL_RECEIVER) once the address's mail is sent there\n`)
    },
  ),
  admin(
    {
      words: ['mailbox', 'list'],
      args: ['<site>'],
      usage: 'mailbox list <site>',
      summary: 'One line per mailbox of the site: its address, and the category its mail goes to.',
      atomic: false,
    },
    async ({ sites, mailboxes }, [permalink], _values, io) => {
      const site = await sites.get(permalink)
      for (const mailbox of await mailboxes.listMailboxes(site.id)) io.stdout(`${shown(mailbox.address)}\t${mailbox.categoryId ?? 'first category'}\n`)
    },
  ),
  admin(
    {
      words: ['mailbox', 'remove'],
      args: ['<site>', '<address>'],
      usage: 'mailbox remove <site> <address>',
      summary: 'Stop taking mail at the address; the discussions its mail made stay.',
    },
    async ({ sites, mailboxes }, [permalink, address], _values, io) => {
      const site = await sites.get(permalink)
      if (!(await mailboxes.removeMailbox(site.id, address))) throw new UsageError(`${site.permalink} has no mailbox ${address}`)
      io.stdout(`mailbox ${address.trim().toLowerCase()} removed from ${site.permalink}\n`)
    },
  ),
]
