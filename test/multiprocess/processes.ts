import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { childEnv } from '../fixtures/child.ts'
import { BIN, type RunningServer } from '../fixtures/server.ts'

// Helpers of the real-process tests: a browser over fetch that keeps cookies (one jar for every
// process, as a browser behind a proxy has), and the service-desk command as a process of its own.

export type Answer = { status: number; body: string; headers: Headers }

/** A tiny browser over real HTTP: cookies, the last page's fields, no redirects followed. */
export function browser() {
  const jar = new Map<string, string>()
  let lastPage = ''

  async function request(server: RunningServer, method: 'GET' | 'POST', path: string, form?: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...headers,
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      const value = pair!.slice(eq + 1)
      if (value === '' || /Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(pair!.slice(0, eq))
      else jar.set(pair!.slice(0, eq), value)
    }
    const body = await res.text()
    if (res.headers.get('content-type')?.startsWith('text/html')) lastPage = body
    return { status: res.status, body, headers: res.headers }
  }

  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(lastPage)?.[1] ?? ''

  return {
    jar,
    request,
    get: (server: RunningServer, path: string) => request(server, 'GET', path),
    field,
    /** Signs in through the sign-in page of `server`. */
    async signIn(server: RunningServer, email: string, password: string, headers: Record<string, string> = {}) {
      await request(server, 'GET', '/demo/login', undefined, headers)
      return request(server, 'POST', '/demo/login', { _csrf: field('_csrf'), email, password }, headers)
    },
    /** A fresh, filled-in token form from the token page of `server`. */
    async tokenForm(server: RunningServer, name: string) {
      const page = await request(server, 'GET', '/demo/profile/api_tokens')
      if (page.status !== 200) throw new Error(`the token page answered ${page.status}`)
      return { _csrf: field('_csrf'), form_id: field('form_id'), name, access: 'read', expires: '7' }
    },
  }
}

/** The first run's sign-in, from the banner. */
export function bannerSignIn(server: RunningServer): { email: string; password: string } {
  const found = /Sign in\s+(\S+)\s+Password\s+(\S+)/.exec(server.output())
  if (!found) throw new Error(`no banner: ${server.output()}`)
  return { email: found[1]!, password: found[2]! }
}

/** Runs `service-desk <args>` as a process of its own; resolves with its exit code and output. */
export async function command(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env: childEnv(env) })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}
