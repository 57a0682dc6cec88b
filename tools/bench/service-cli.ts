import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { MAX_RATE_LIMIT } from '../../plugins/rate-limits.ts'

// The service-desk command line, run the way an operator runs it: its own process, through bin/.

export const REPO = resolve(import.meta.dirname, '..', '..')
export const SERVICE_BIN = join(REPO, 'cli', 'service-desk.js')

// Every process of a run (command line and servers) shares this server key, so a legacy token
// read by `legacy-token show` is the one the servers check, and no key file is written.
export const BENCH_SECRET = 'bench-secret-not-for-production-0123456789abcdef'

export function benchEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SERVICE_SECRET: BENCH_SECRET }
  // The load is tens of thousands of requests a second from one token and one address: the rate
  // limits are counted as always (their cost is part of every figure) but set where the load does
  // not meet them (plugins/rate-limits.ts).
  for (const name of ['SERVICE_RATE_LIMIT_READS', 'SERVICE_RATE_LIMIT_WRITES', 'SERVICE_RATE_LIMIT_ANONYMOUS']) env[name] = String(MAX_RATE_LIMIT)
  // The webhook endpoint of the write-hook server is the bench's own receiver, on loopback.
  env.SERVICE_WEBHOOK_ALLOW = '127.0.0.0/8'
  // A run must not pick up an operator's database, address or port from the environment.
  for (const name of ['SERVICE_DB', 'SERVICE_BASE_URL', 'SERVICE_SITE_URL', 'PORT', 'HOST']) delete env[name]
  return env
}

export interface CliResult {
  stdout: string
  stderr: string
  ms: number
}

/** Runs `service-desk <args> [--db <address>]`; rejects with its standard error when it exits non-zero. */
export function serviceDesk(args: string[], databaseAddress: string | undefined, stdin?: string): Promise<CliResult> {
  const started = performance.now()
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [SERVICE_BIN, ...args, ...(databaseAddress === undefined ? [] : ['--db', databaseAddress])], {
      cwd: REPO,
      env: benchEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      const ms = performance.now() - started
      if (code === 0) resolvePromise({ stdout, stderr, ms })
      else reject(new Error(`service-desk ${args.join(' ')} exited ${code}: ${stderr.trim().split('\r').pop()}`))
    })
    child.stdin.end(stdin ?? '')
  })
}
