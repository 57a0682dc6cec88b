import { Readable } from 'node:stream'
import type { CustomerExport } from '../db/stores/customer-data.ts'

// The ZIP of a customer's export (issue 74; db/stores/customer-data.ts): JSON a person or a program
// reads, and their files as they sent them, written by yazl as it is read (a file's pieces are read
// one at a time: the export of a customer with large files never sits whole in memory). yazl is
// loaded by the first export, not by every start (docs/decisions.md, "What a start paid for
// without asking").

/** Reads piece `seq` of a file; undefined past its last. */
export type PieceReader = (fileId: number, seq: number) => Promise<Buffer | undefined>

const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`)

/** A file's bytes as a stream of its pieces. */
function fileStream(fileId: number, piece: PieceReader): Readable {
  let seq = 0
  return Readable.from((async function* () {
    for (let bytes = await piece(fileId, seq); bytes !== undefined; bytes = await piece(fileId, ++seq)) yield bytes
  })())
}

/** What the README of the ZIP says. */
function readme(siteName: string, data: CustomerExport, at: Date): string {
  return [
    `Your data on ${siteName}, as of ${at.toISOString()}.`,
    '',
    'customer.json      your account (name, address), the team\'s record of you, your mails\' headers',
    'discussions/*.json each discussion you started, wrote in or were copied on, with the comments you could see:',
    '                   yours and the team\'s replies in full; another customer\'s comment is named, not copied',
    'files/             the files you sent, and the mails you wrote as they came',
    '',
    `${data.discussions.length} discussions, ${data.files.length} files.`,
    '',
  ].join('\n')
}

/** The ZIP as a stream: customer.json, one JSON per discussion, the files, and a README. */
export async function exportZip(siteName: string, data: CustomerExport, piece: PieceReader, at: Date): Promise<Readable> {
  const { ZipFile } = await import('yazl')
  const zip = new ZipFile()
  const options = { mtime: at }
  zip.addBuffer(Buffer.from(readme(siteName, data, at)), 'README.txt', options)
  zip.addBuffer(json({ site: siteName, exported_at: at.toISOString(), account: data.account, fields: data.fields, mails: data.mails, discussions: data.discussions.map((d) => d.number) }), 'customer.json', options)
  for (const d of data.discussions) zip.addBuffer(json(d), `discussions/${d.number}.json`, options)
  for (const f of data.files) zip.addReadStream(fileStream(f.fileId, piece), f.path, { ...options, size: f.size })
  zip.end()
  return zip.outputStream as Readable
}
