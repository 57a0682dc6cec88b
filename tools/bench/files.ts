import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { REPO } from './service-cli.ts'
import { startServer, type Server } from './servers.ts'

// npm run bench:files [-- --rounds N --files N]: uploading and downloading a 5 MB file, the time
// and the memory, on the service (SQLite, `service-desk serve`: a file streamed into 256 KiB
// pieces, db/stores/files.ts) and on the bare stack doing the same job
// (tools/bench/baseline-files.ts: the whole file read into memory, one blob row). Alternating
// rounds, sequential requests from one client, each file new (no file the service already has).
// The table goes to tools/bench/results/files.md.

const { values: flags } = parseArgs({ options: { rounds: { type: 'string' }, files: { type: 'string' } } })
const ROUNDS = Number(flags.rounds ?? 3)
const FILES = Number(flags.files ?? 10)
const SIZE = 5 * 1024 * 1024
const V1 = 'application/vnd.service-v1+json'

interface Side {
  server: Server
  upload(bytes: Buffer, n: number): Promise<number>
  download(id: number): Promise<Buffer>
}

interface Measured {
  uploadMs: number[]
  downloadMs: number[]
  peakMb: number
  idleMb: number
}

const dir = mkdtempSync(join(os.tmpdir(), 'service-desk-bench-files-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))

async function service(): Promise<Side> {
  const server = await startServer({ name: 'service', kind: 'service', db: join(dir, 'service.db'), first: { path: '/healthz' }, logDir: dir })
  let token: string | undefined
  for (let i = 0; i < 200 && !token; i++) {
    token = /API token\s+(service_pat_\S+)/.exec(readFileSync(join(dir, 'service.log'), 'utf8'))?.[1]
    if (!token) await new Promise((resolve) => setTimeout(resolve, 25))
  }
  if (!token) throw new Error('the service printed no API token')
  const auth = { authorization: `Bearer ${token}` }
  return {
    server,
    async upload(bytes, n) {
      const form = new FormData()
      form.append('file', new Blob([bytes]), `file-${n}.bin`)
      const res = await fetch(`${server.url}/demo/uploads`, { method: 'POST', headers: { ...auth, accept: V1 }, body: form })
      if (res.status !== 201) throw new Error(`service upload: ${res.status} ${await res.text()}`)
      return ((await res.json()) as { uploads: Array<{ id: number }> }).uploads[0]!.id
    },
    async download(id) {
      const res = await fetch(`${server.url}/demo/attachments/${id}`, { headers: auth })
      if (res.status !== 200) throw new Error(`service download: ${res.status}`)
      return Buffer.from(await res.arrayBuffer())
    },
  }
}

async function baseline(): Promise<Side> {
  const server = await startServer({ name: 'baseline-files', kind: 'baseline-files', db: join(dir, 'baseline.db'), first: { path: '/bare' }, logDir: dir })
  return {
    server,
    async upload(bytes, n) {
      const form = new FormData()
      form.append('file', new Blob([bytes]), `file-${n}.bin`)
      const res = await fetch(`${server.url}/uploads`, { method: 'POST', body: form })
      if (res.status !== 201) throw new Error(`baseline upload: ${res.status}`)
      return ((await res.json()) as { uploads: Array<{ id: number }> }).uploads[0]!.id
    },
    async download(id) {
      return Buffer.from(await (await fetch(`${server.url}/attachments/${id}`)).arrayBuffer())
    },
  }
}

/** One round on one side: FILES new files up, then each down (checked byte for byte), the server's RSS watched. */
async function round(side: Side, into: Measured) {
  let peak = side.server.rssMb()
  const watch = setInterval(() => (peak = Math.max(peak, side.server.rssMb())), 5)
  const sent: Array<[number, Buffer]> = []
  for (let n = 0; n < FILES; n++) {
    const bytes = randomBytes(SIZE)
    const started = performance.now()
    const id = await side.upload(bytes, n)
    into.uploadMs.push(performance.now() - started)
    sent.push([id, bytes])
  }
  for (const [id, bytes] of sent) {
    const started = performance.now()
    const got = await side.download(id)
    into.downloadMs.push(performance.now() - started)
    if (!got.equals(bytes)) throw new Error(`${side.server.name}: file ${id} came back different`)
  }
  clearInterval(watch)
  into.peakMb = Math.max(into.peakMb, peak)
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const sides = [await service(), await baseline()]
const measured = new Map<string, Measured>(sides.map((side) => [side.server.name, { uploadMs: [], downloadMs: [], peakMb: 0, idleMb: side.server.rssMb() }]))
for (let r = 0; r < ROUNDS; r++) {
  // Alternating which goes first, so neither always meets a warmer machine.
  for (const side of r % 2 === 0 ? sides : [...sides].reverse()) await round(side, measured.get(side.server.name)!)
}
for (const side of sides) await side.server.stop()

const [ours, bare] = sides.map((side) => measured.get(side.server.name)!) as [Measured, Measured]
const row = (name: string, m: Measured) =>
  `| ${name} | ${median(m.uploadMs).toFixed(1)} | ${median(m.downloadMs).toFixed(1)} | ${m.idleMb.toFixed(0)} | ${m.peakMb.toFixed(0)} | ${(m.peakMb - m.idleMb).toFixed(0)} |`
const table = [
  `# Files: a 5 MB file up and down (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}, SQLite)`,
  '',
  `${ROUNDS} alternating rounds of ${FILES} new files each, one client, sequential requests; the median of ${ROUNDS * FILES} requests; the server's resident memory sampled every 5 ms.`,
  '',
  '| server | upload, ms | download, ms | RSS idle, MB | RSS peak, MB | peak over idle, MB |',
  '|---|---:|---:|---:|---:|---:|',
  row('service (`service-desk serve`)', ours),
  row('bare stack (tools/bench/baseline-files.ts)', bare),
  '',
  `Ratios, service over bare stack: upload ${(median(ours.uploadMs) / median(bare.uploadMs)).toFixed(2)}, download ${(median(ours.downloadMs) / median(bare.downloadMs)).toFixed(2)}, memory over idle ${((ours.peakMb - ours.idleMb) / Math.max(1, bare.peakMb - bare.idleMb)).toFixed(2)}.`,
  '',
]
writeFileSync(join(REPO, 'tools', 'bench', 'results', 'files.md'), table.join('\n'))
console.log(table.join('\n'))
