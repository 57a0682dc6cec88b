import { createWriteStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { OPERATOR } from '../db/stores/audit.ts'
import { exportZip } from '../lib/customer-export.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// A customer's data on the command line (issue 74; docs/decisions.md, "A customer's data on
// request"): the ZIP an administrator exports on the API, written to a file the operator names.

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
      await pipeline(exportZip(site.name, data, (fileId, seq) => files.piece(fileId, seq), new Date(io.clock())), createWriteStream(file!, { flags: 'wx' }))
      io.stdout(`${file}: ${data.discussions.length} discussions and ${data.files.length} files of ${data.account.email}\n`)
    },
  ),
]
