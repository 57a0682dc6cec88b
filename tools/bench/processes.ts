import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { join } from 'node:path'
import { buildSync } from 'esbuild'
import { benchEnv, REPO, SERVICE_BIN } from './service-cli.ts'

// Servers under test, each in its own process on 127.0.0.1: the service as an operator starts
// it (`service-desk serve` in a checkout, or the single executable), and the baseline app. Their
// output goes to a log file, not a pipe: on Linux a pipe makes a process's writes synchronous, so
// a slow reader would slow the server.

export const HOST = '127.0.0.1'

// A run that fails half-way must not leave servers behind.
const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL')
})

export interface FirstRequest {
  path: string
  headers?: Record<string, string>
}

export interface Server {
  name: string
  pid: number
  port: number
  url: string
  /** From spawn to the first answer of any status to `first`. */
  startupMs: number
  firstStatus: number
  /** Resident set size now, from /proc/<pid>/status, in MB; VmHWM is the peak so far. */
  rss(): Memory
  cpu(): number
  /** How the process ended, when it has: 'exited 1', 'exited SIGKILL'. */
  exited(): string | undefined
  stop(): Promise<void>
  profileDir?: string
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

export interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** One request on a fresh connection; the answer, or undefined when nothing listens yet. */
export function probe(port: number, first: FirstRequest): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const request = http.get({ host: HOST, port, path: first.path, headers: first.headers, agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }))
    })
    request.on('error', () => resolve(undefined))
  })
}

// Clock ticks per second of /proc/<pid>/stat's CPU times.
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/**
 * CPU seconds the process has used so far, every thread included (user + system, from
 * /proc/<pid>/stat). Unlike wall time it does not grow while other processes hold the CPU.
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name may hold spaces; the fields after it are fixed: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

export interface Memory {
  rssMb: number
  /** VmHWM: the largest resident set so far. */
  peakMb: number
  /** Of the resident set: anonymous memory (heaps) and mapped files (node's code, native addons). */
  anonMb: number
  fileMb: number
}

export function readRss(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024
  return { rssMb: mb('VmRSS'), peakMb: mb('VmHWM'), anonMb: mb('RssAnon'), fileMb: mb('RssFile') }
}

const baselineFiles = new Map<string, string>()
/**
 * A baseline as plain JavaScript, bundled once per run from its TypeScript (tools/bench/baseline.ts
 * on SQLite, tools/bench/baseline-postgres.ts on PostgreSQL, each with tools/bench/baseline-shape.ts;
 * packages stay imports): the service's command runs JavaScript compiled into dist/, so the baseline
 * runs without a TypeScript loader in its process too. Written under tools/bench/.cache/, whence
 * `fastify`, `better-sqlite3` and `pg` resolve from the checkout's node_modules.
 */
export function baselineScript(engine: 'sqlite' | 'postgres' = 'sqlite'): string {
  const cached = baselineFiles.get(engine)
  if (cached) return cached
  const name = engine === 'sqlite' ? 'baseline' : 'baseline-postgres'
  const dir = join(REPO, 'tools', 'bench', '.cache', 'baseline')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${name}.mjs`)
  buildSync({
    entryPoints: [join(REPO, 'tools', 'bench', `${name}.ts`)],
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node.split('.')[0]}`,
    outfile: `${file}.tmp`,
    logLevel: 'silent',
  })
  renameSync(`${file}.tmp`, file)
  baselineFiles.set(engine, file)
  return file
}

export interface StartOptions {
  name: string
  /**
   * `binary` is the single executable (`npm run build:binary`), started from `executable`;
   * `baseline-postgres` the PostgreSQL baseline (`db` is then a postgres:// address, and `pool` its pool size).
   */
  kind: 'service' | 'baseline' | 'baseline-postgres' | 'binary'
  pool?: number
  executable?: string
  /**
   * Options for node itself (e.g. --max-semi-space-size=4): before the script, or for the single
   * executable in NODE_OPTIONS, which it reads as node does (its own arguments are the service's).
   */
  nodeFlags?: string[]
  /** Added to the environment (the single executable's XDG_CACHE_HOME). */
  env?: Record<string, string>
  db: string
  baseUrl: string
  siteUrl: string
  first: FirstRequest
  logDir: string
  /** Write a V8 CPU profile of the server into this folder (node --cpu-prof). */
  profileDir?: string
  timeoutMs?: number
}

export async function startServer(options: StartOptions): Promise<Server> {
  const port = await freePort()
  const url = `http://${HOST}:${port}`
  const profile = options.profileDir ? join(options.profileDir, options.name) : undefined
  if (profile) mkdirSync(profile, { recursive: true })
  const node = [...(options.nodeFlags ?? []), ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])]
  const serve = ['serve', '--db', options.db, '--port', String(port), '--host', HOST, '--base-url', options.baseUrl, '--site-url', options.siteUrl]
  const baselineArgs = ['--db', options.db, '--port', String(port), '--base-url', options.baseUrl, '--site-url', options.siteUrl]
  const args =
    options.kind === 'service'
      ? [SERVICE_BIN, ...serve]
      : options.kind === 'baseline-postgres'
        ? [baselineScript('postgres'), ...baselineArgs, '--pool', String(options.pool ?? 10)]
        : [baselineScript(), ...baselineArgs]
  const env = { ...benchEnv(), ...options.env }
  const binary = options.kind === 'binary'
  if (binary && node.length > 0) env.NODE_OPTIONS = [env.NODE_OPTIONS, ...node].filter(Boolean).join(' ')
  mkdirSync(options.logDir, { recursive: true })
  const log = openSync(join(options.logDir, `${options.name}.log`), 'a')
  const started = performance.now()
  const [command, argv] = binary ? [options.executable!, serve] : [process.execPath, [...node, ...args]]
  const child: ChildProcess = spawn(command, argv, { cwd: REPO, env, stdio: ['ignore', log, log] })
  closeSync(log)
  live.add(child)
  let exited: string | undefined
  let stopping = false
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = `exited ${code ?? signal}`
      live.delete(child)
      // Said at once: a server that dies mid-run (a crash, or a signal from outside) must not go unnoticed.
      if (!stopping) console.error(`${options.name} (pid ${child.pid}) ${exited} unexpectedly; see ${join(options.logDir, `${options.name}.log`)}`)
      resolve()
    }),
  )

  const deadline = started + (options.timeoutMs ?? 60_000)
  let answer: Awaited<ReturnType<typeof probe>>
  while (!(answer = await probe(port, options.first))) {
    if (exited) throw new Error(`${options.name} ${exited} before answering; see ${join(options.logDir, `${options.name}.log`)}`)
    if (performance.now() > deadline) {
      stopping = true
      child.kill('SIGKILL')
      throw new Error(`${options.name} did not answer within ${options.timeoutMs ?? 60_000} ms`)
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const startupMs = performance.now() - started

  return {
    name: options.name,
    pid: child.pid!,
    port,
    url,
    startupMs,
    firstStatus: answer.status,
    profileDir: profile,
    rss: () => readRss(child.pid!),
    cpu: () => cpuSeconds(child.pid!),
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

/** The main thread's profile of a server run with a profile folder (tsx's loader thread writes one too). */
export function mainThreadProfile(dir: string): string | undefined {
  // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile; the main thread is thread 0.
  const file = readdirSync(dir).find((name) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name))
  return file && join(dir, file)
}
