import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { childEnv } from '../fixtures/child.ts'
import { BIN } from '../fixtures/server.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 14, item 4: the command runs plain JavaScript built into dist/ (cli/build.js); no
// TypeScript source and no TypeScript loader is loaded by the service's process.

t.test('the service process loads compiled JavaScript only', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-modules-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const record = join(dir, 'modules.txt')
  const paid = join(dir, 'paid.txt')
  const hook = new URL('../fixtures/record-modules.mjs', import.meta.url).pathname
  const paidHook = new URL('../fixtures/record-start.mjs', import.meta.url).pathname
  // --version loads the whole command (cli/main.js imports every command, the server's too).
  const result = spawnSync(process.execPath, ['--import', hook, '--import', paidHook, BIN, '--version'], {
    env: childEnv({ RECORD_MODULES: record, RECORD_START: paid, NODE_OPTIONS: '' }),
    encoding: 'utf8',
  })
  t.equal(result.status, 0, result.stderr)
  t.match(result.stdout, /^service-desk \d+\.\d+\.\d+\n$/)
  const modules = readFileSync(record, 'utf8').trim().split('\n')
  t.ok(modules.some((url) => url.endsWith('/dist/main.js')), 'the built command is loaded')
  // Bundled, with TypeBox: a few dozen files of dist/, none of TypeBox's 683 (docs/decisions.md,
  // "Compiled JavaScript in production").
  const dist = new URL('../../dist/', import.meta.url).href
  const ours = modules.filter((url) => url.startsWith(dist))
  t.ok(ours.length < 60, `${ours.length} modules of dist/`)
  t.same(modules.filter((url) => url.includes('/node_modules/typebox/')), [], 'TypeBox is in the bundle')
  t.same(modules.filter((url) => url.endsWith('.ts') || url.endsWith('.mts')), [], 'no TypeScript source')
  t.same(modules.filter((url) => /\/node_modules\/(tsx|typescript|esbuild)\//.test(url)), [], 'no TypeScript loader or compiler')
  // What only some requests or some settings need is loaded at their first use, not by every start
  // (docs/decisions.md, "Writes as light as reads (issue 75)"): mail's parser alone, with what it
  // brings, is 1.5 MB of JavaScript that a process taking no mail would load and keep for nothing.
  const onDemand = /\/node_modules\/(mailparser|mailauth|smtp-server|imapflow|nodemailer|oidc-provider|openid-client|@modelcontextprotocol\/sdk|@simplewebauthn\/server|date-holidays|qrcode|otplib|file-type|jose|pg|yazl|luxon|ajv|@fastify\/fast-json-stringify-compiler)\//
  t.same(modules.filter((url) => onDemand.test(url)), [], 'no library of mail, OAuth, MCP, passkeys, holidays, business time, schema compilers, PostgreSQL or exports')
  // Nor ICU's data: a locale-sensitive call as the modules load (a number written with
  // toLocaleString in a schema's description) paged about 5 MB of the node binary in for good. Nor
  // undici: an ES import of node:http loads it (its WebSocket export), about 3 MB of heap.
  t.notOk(existsSync(paid), `no locale-sensitive call and no undici while loading: ${existsSync(paid) ? readFileSync(paid, 'utf8').trim() : ''}`)
})

t.test('the command keeps V8\'s compiled code between starts, in the system\'s temporary folder', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-tmp-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = childEnv({ TMPDIR: dir, NODE_OPTIONS: '' })
  delete env.NODE_COMPILE_CACHE
  delete env.NODE_DISABLE_COMPILE_CACHE
  const result = spawnSync(process.execPath, [BIN, '--version'], { env, encoding: 'utf8' })
  t.equal(result.status, 0, result.stderr)
  const cache = join(dir, 'node-compile-cache')
  t.ok(existsSync(cache) && readdirSync(cache).length > 0, 'the cache is written')
  const off = mkdtempSync(join(tmpdir(), 'service-desk-tmp-'))
  t.teardown(() => rmSync(off, { recursive: true, force: true }))
  t.equal(spawnSync(process.execPath, [BIN, '--version'], { env: { ...env, TMPDIR: off, NODE_DISABLE_COMPILE_CACHE: '1' } }).status, 0)
  t.notOk(existsSync(join(off, 'node-compile-cache')), 'NODE_DISABLE_COMPILE_CACHE=1 turns it off')
})

/** A Node older than the engines allow, as these machines have at /usr/bin/node, or none. */
function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' })
    if (version.status === 0 && Number(/^v(\d+)/.exec(version.stdout)?.[1]) < 22) return candidate
  }
  return undefined
}

const older = olderNode()

t.test("started by an older Node, the command hands itself to the project's own", { skip: older ? false : 'no Node older than 22 here' }, async (t) => {
  if (!older) return
  const printed = spawnSync(older, [BIN, '--version'], { encoding: 'utf8', env: childEnv({}, { preload: false }) })
  t.equal(printed.status, 0, printed.stderr)
  t.match(printed.stdout, /^service-desk \d+\.\d+\.\d+\n$/)
  const refused = spawnSync(older, [BIN, 'no-such-command'], { encoding: 'utf8', env: childEnv({}, { preload: false }) })
  t.equal(refused.status, 2, "the command's exit code comes back through")
})
