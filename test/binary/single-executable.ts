// `npm run test:binary`: builds the single executable and uses it as a server would, from a folder
// holding nothing else. Kept out of `npm test` (its include is test/**/*.test.ts): the build takes
// several seconds of both cores and writes a 100 MB file, which is a packaging check, not a unit
// of the service; .ci/run runs it right after `npm test`.
// It runs with --disable-coverage: what it exercises runs inside the executable, where no coverage
// is collected, and tools/build/binary.ts only ever runs whole; the service's own code keeps its 100%
// under `npm test`.
import { spawn } from 'node:child_process'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { buildBinary, REPO } from '../../tools/build/binary.ts'
import { freePort } from '../fixtures/server.ts'

const NAME = 'service-desk-linux-x64'
const ACCEPT = 'application/vnd.service-v1+json'
const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }

function temp(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const started = Date.now()
const built = await buildBinary()
t.comment(`built ${NAME}: ${(built.size / 1e6).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s`)

const folder = temp('service-desk-binary-')
for (let dir = folder; dir !== dirname(dir); dir = dirname(dir)) {
  if (existsSync(join(dir, 'node_modules'))) throw new Error(`${dir} has a node_modules folder; the test needs a temporary folder without one above it`)
}
const binary = join(folder, NAME)
copyFileSync(built.file, binary)
chmodSync(binary, 0o755)
const cache = temp('service-desk-binary-cache-')
// Nothing of this process's environment: no NODE_OPTIONS (tap's loaders), no NODE_PATH, no checkout.
const env = { PATH: '/usr/bin:/bin', HOME: cache, XDG_CACHE_HOME: cache }
const db = join('data', 'service.db')

function run(args: string[], stdin = '') {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(binary, args, { cwd: folder, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(stdin)
  })
}

/** Starts `serve` and resolves at its first answer, with the milliseconds that took. */
async function serve(t: Test) {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const since = performance.now()
  const child = spawn(binary, ['serve', '--port', String(port), '--db', db], { cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM')
    return exited
  }
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')))
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve exited: ${output}`)
    const answer = await fetch(`${base}/README.md`).catch(() => undefined)
    if (answer?.status === 200) break
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const ms = Math.round(performance.now() - since)
  // The banner is written right after listening.
  await new Promise((resolve) => setTimeout(resolve, 100))
  return { base, ms, output: () => output, stop }
}

t.test('the file is alone in its folder and names no path of the checkout', async (t) => {
  t.same(readdirSync(folder), [NAME])
  t.notOk(readFileSync(binary).includes(REPO), 'no path of this machine is baked in')
})

t.test('--version, --help and a usage error, with their exit codes', async (t) => {
  t.same(await run(['--version']), { code: 0, stdout: `service-desk ${version}\n`, stderr: '' })
  t.match((await run(['--help'])).stdout, /^Usage: service-desk <command>/)
  const unknown = await run(['frobnicate'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, 'unknown command "frobnicate"')
})

t.test('first run on a fresh database, then the API, the sign-in form and an administration command', async (t) => {
  const server = await serve(t)
  t.comment(`first answer on a fresh database: ${server.ms} ms`)
  const banner = server.output()
  t.match(banner, `First run: site "demo" is ready`)
  t.match(banner, `Supporter pages  ${server.base}/demo/login`)
  const token = /API token        (service_pat_\w+)/.exec(banner)![1]
  const password = /Password         (\S+)/.exec(banner)![1]

  const listing = await fetch(`${server.base}/demo/discussions`, { headers: { accept: ACCEPT, authorization: `Bearer ${token}` } })
  t.equal(listing.status, 200, 'a personal token works')
  t.equal(listing.headers.get('content-type'), `${ACCEPT}; charset=utf-8`)
  t.match(await listing.json(), { offset: 0, per_page: 30 })

  // A file up and down: the multipart reader and the type detector (file-type, loaded on first use) travel inside.
  const upload = new FormData()
  upload.append('file', new Blob([Buffer.from('%PDF-1.7\nthe receipt')]), 'receipt.pdf')
  const uploaded = await fetch(`${server.base}/demo/uploads`, { method: 'POST', headers: { accept: ACCEPT, authorization: `Bearer ${token}` }, body: upload })
  t.equal(uploaded.status, 201)
  const [file] = ((await uploaded.json()) as { uploads: Array<{ href: string; content_type: string }> }).uploads
  t.equal(file!.content_type, 'application/pdf', 'the type detected from the bytes')
  t.equal(await (await fetch(file!.href.replace(/^https?:\/\/[^/]+/, server.base), { headers: { authorization: `Bearer ${token}` } })).text(), '%PDF-1.7\nthe receipt')

  const form = await fetch(`${server.base}/demo/login`)
  t.equal(form.status, 200)
  const page = await form.text()
  t.match(page, `<form method="post" action="${server.base}/demo/login">`, 'the sign-in form, from the unpacked views')
  const css = await fetch(`${server.base}/demo/assets/app.css`)
  t.equal(css.status, 200, 'and its stylesheet')
  const readme = await fetch(`${server.base}/README.md`)
  t.equal(await readme.text(), readFileSync(join(REPO, 'README.md'), 'utf8'), 'the README travels inside')

  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]
  const cookie = form.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ')
  const signIn = (password: string) =>
    fetch(`${server.base}/demo/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, email: 'supporter@example.com', password }),
    })
  const wrong = await signIn('not the password at all')
  t.equal(wrong.status, 401, 'a wrong password is refused (argon2 verifies)')
  const signedIn = await signIn(password)
  t.equal(signedIn.status, 303, 'the bootstrap password signs in')
  t.match(signedIn.headers.get('location'), '/demo/discussions')

  // An administration command on the database the server has open.
  t.same(await run(['site', 'list', '--db', db]), { code: 0, stdout: 'demo\tDemo\n', stderr: '' })
  const added = await run(['user', 'add', 'ann@example.test', '--password-stdin', '--db', db], 'correct horse battery staple\n')
  t.same(added, { code: 0, stdout: 'user ann@example.test created\n', stderr: '' }, 'argon2 hashes in the command too')
  const again = await run(['site', 'add', 'demo', '--db', db])
  t.equal(again.code, 1, 'a refused command exits 1')
  t.match(again.stderr, /^service-desk: /)

  t.equal(await server.stop(), 0, 'SIGTERM closes gracefully')
  t.notMatch(server.output(), /"level":50/, 'no error was logged')

  const second = await serve(t)
  t.comment(`first answer on an existing database: ${second.ms} ms`)
  t.notMatch(second.output(), /First run/)
  const still = await fetch(`${second.base}/demo`, { headers: { accept: ACCEPT, authorization: `Bearer ${token}` } })
  t.equal(still.status, 200, 'the same database, the same token')
  t.equal(await second.stop(), 0)
})

t.test('the cache folder: private, checked at every start, refused when others can write to it', async (t) => {
  const root = join(cache, 'service-desk')
  const [unpacked] = readdirSync(root)
  t.match(unpacked, new RegExp(`^${version.replaceAll('.', '\\.')}-[0-9a-f]{16}$`))
  const dir = join(root, unpacked)
  t.equal(statSync(root).mode & 0o777, 0o700)
  t.equal(statSync(dir).mode & 0o777, 0o700)
  t.equal(statSync(join(dir, 'native', 'better_sqlite3.node')).mode & 0o777, 0o600)

  const layout = join(dir, 'views', 'layout.eta')
  const original = readFileSync(layout, 'utf8')
  writeFileSync(layout, '<%~ it.body %><script>tampered</script>')
  rmSync(join(dir, 'native', 'argon2.node'))
  t.equal((await run(['--version'])).code, 0)
  t.equal(readFileSync(layout, 'utf8'), original, 'a changed file is written again')
  t.ok(existsSync(join(dir, 'native', 'argon2.node')), 'a missing file too')

  chmodSync(dir, 0o770)
  const refused = await run(['site', 'list', '--db', db])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^service-desk: cannot prepare the cache folder .*: .* is writable by other users; run chmod 700 on it\n$/)
  chmodSync(dir, 0o700)
  t.equal((await run(['site', 'list', '--db', db])).code, 0)

  // Only root can hand a folder to someone else (CI runs as root).
  if (process.getuid!() === 0) {
    chownSync(dir, 65534, 65534)
    const foreign = await run(['--version'])
    t.equal(foreign.code, 1)
    t.match(foreign.stderr, /belongs to another user; remove it or set XDG_CACHE_HOME\n$/)
    chownSync(dir, 0, 0)
  }
})
