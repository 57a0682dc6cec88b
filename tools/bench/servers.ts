import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, renameSync } from 'node:fs'
import http from 'node:http'
import type { RequestData } from 'autocannon'
import net from 'node:net'
import { join } from 'node:path'
import { buildSync } from 'esbuild'
import { benchEnv, REPO, SERVICE_BIN } from './service-cli.ts'

// The servers under test, each in its own process on 127.0.0.1: the service as an operator starts
// it (`service-desk serve`), and the baselines. Their output goes to a log file, not a pipe: on
// Linux a pipe makes a process's writes synchronous, so a slow reader would slow the server.

export const HOST = '127.0.0.1'
export type ServerKind = 'service' | 'baseline' | 'baseline-postgres' | 'baseline-files'

// A run that fails half-way must not leave servers behind.
const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL')
})

export interface Request {
  method?: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: string
  /** Under load, called for every request to change what is sent (load.ts); a probe sends `headers`. */
  setupRequest?: (request: RequestData) => RequestData
}

export interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

export interface Server {
  name: string
  pid: number
  url: string
  /** From spawn to the first answer. */
  startupMs: number
  /** Resident set size now, in MB (/proc/<pid>/status). */
  rssMb(): number
  /** CPU seconds so far, every thread (user + system, /proc/<pid>/stat): it does not grow while others hold the CPU. */
  cpu(): number
  exited(): string | undefined
  stop(): Promise<void>
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** One request on a fresh connection; the answer, or undefined when nothing listens yet. */
export function probe(url: string, request: Request): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const sent = http.request(`${url}${request.path}`, { method: request.method ?? 'GET', headers: request.headers, agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }))
    })
    sent.on('error', () => resolve(undefined))
    sent.end(request.body)
  })
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name may hold spaces; utime and stime are the 12th and 13th fields after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024
}

/**
 * A baseline as plain JavaScript, bundled from its TypeScript once per run (packages stay
 * imports): the service runs JavaScript compiled into dist/, so the baseline runs without a
 * TypeScript loader too. Written under tools/bench/.cache/, whence its packages resolve.
 */
function baselineScript(kind: Exclude<ServerKind, 'service'>): string {
  const file = join(REPO, 'tools', 'bench', '.cache', 'baseline', `${kind}.mjs`)
  mkdirSync(join(file, '..'), { recursive: true })
  buildSync({
    entryPoints: [join(REPO, 'tools', 'bench', `${kind}.ts`)],
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node.split('.')[0]}`,
    outfile: `${file}.tmp`,
    logLevel: 'silent',
  })
  renameSync(`${file}.tmp`, file)
  return file
}
const scripts = new Map<string, string>()

export interface StartOptions {
  name: string
  kind: ServerKind
  /** A SQLite file or a postgres:// address. */
  db: string
  /** Asked until it answers: the moment of that answer ends the start-up. */
  first: Request
  logDir: string
  env?: Record<string, string>
  /** The service's command to run, when not this checkout's (a build of another commit). */
  bin?: string
}

// Links in answers are built from these; nothing ever connects to them.
const LINKS = ['--base-url', 'http://bench.example', '--site-url', 'http://bench.example/{site}']

export async function startServer({ name, kind, db, first, logDir, env, bin }: StartOptions): Promise<Server> {
  const port = await freePort()
  const url = `http://${HOST}:${port}`
  const script = kind === 'service' ? (bin ?? SERVICE_BIN) : (scripts.get(kind) ?? scripts.set(kind, baselineScript(kind)).get(kind)!)
  const args = [script, ...(kind === 'service' ? ['serve', '--host', HOST] : []), '--db', db, '--port', String(port), ...LINKS]
  mkdirSync(logDir, { recursive: true })
  const logFile = join(logDir, `${name}.log`)
  const log = openSync(logFile, 'a')
  const started = performance.now()
  const child = spawn(process.execPath, args, { cwd: REPO, env: { ...benchEnv(), ...env }, stdio: ['ignore', log, log] })
  closeSync(log)
  live.add(child)
  let exited: string | undefined
  let stopping = false
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = `exited ${code ?? signal}`
      live.delete(child)
      // A server that dies mid-run must not go unnoticed.
      if (!stopping) console.error(`${name} (pid ${child.pid}) ${exited} unexpectedly; see ${logFile}`)
      resolve()
    }),
  )
  const deadline = started + 60_000
  while (!(await probe(url, first))) {
    if (exited) throw new Error(`${name} ${exited} before answering; see ${logFile}`)
    if (performance.now() > deadline) throw new Error(`${name} did not answer within 60 s; see ${logFile}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const startupMs = performance.now() - started
  const pid = child.pid!
  return {
    name,
    pid,
    url,
    startupMs,
    rssMb: () => rssMb(pid),
    cpu: () => cpuSeconds(pid),
    exited: () => exited,
    async stop() {
      if (exited) return
      stopping = true
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exit
      clearTimeout(timer)
    },
  }
}

/** Signs a supporter in on the service's pages, as a browser does: the session cookie, for the page scenarios. */
export async function signIn(url: string, person: { site: string; email: string; password: string }): Promise<string> {
  const jar = new Map<string, string>()
  const keep = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
    }
  }
  const cookies = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const form = await fetch(`${url}/${person.site}/login`, { headers: { accept: 'text/html' } })
  keep(form)
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1]
  if (!csrf) throw new Error(`the sign-in page at ${url} has no form`)
  const body = new URLSearchParams({ _csrf: csrf, email: person.email, password: person.password })
  const signedIn = await fetch(`${url}/${person.site}/login`, { method: 'POST', redirect: 'manual', headers: { cookie: cookies(), 'content-type': 'application/x-www-form-urlencoded' }, body })
  keep(signedIn)
  const session = jar.get('service_session')
  if (signedIn.status !== 303 || !session) throw new Error(`signing in at ${url} answered ${signedIn.status}`)
  return `service_session=${session}`
}
