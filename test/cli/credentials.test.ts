import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { makeMultipass } from '../fixtures/credentials.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'

// Engines: one: the credential commands (legacy token, multipass key, the server key's source). Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

t.test('legacy-token show and reset; the server reads the same server key', async (t) => {
  const { run, appDatabase, dir, clock } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  await run(['user', 'add', 'ann@example.test'])
  await run(['staff', 'add', 'demo', 'ann@example.test'])
  t.test('the key file, on SQLite without SERVICE_SECRET', { skip: SQLITE_ONLY && 'PostgreSQL needs SERVICE_SECRET: no key file' }, async (t) => {
    t.equal(statSync(join(dir, 'service.key')).mode & 0o777, 0o600, 'the key file was made beside the database, private')
  })

  const shown = await run(['legacy-token', 'show', 'ANN@example.test'])
  t.equal(shown.code, 0)
  t.match(shown.stdout, /^[0-9a-f]{40}\n$/, 'the value alone on standard output')
  t.equal(shown.stderr, 'expires 2027-03-01 12:00 UTC\n')
  const value = shown.stdout.trim()
  t.equal((await run(['legacy-token', 'show', 'ann@example.test'])).stdout, shown.stdout, 'the same value each time')

  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...appDatabase }, clock })
  t.teardown(() => app.close())
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })).statusCode, 200, 'the server takes it')

  clock.advanceDays(30)
  const reset = await run(['legacy-token', 'reset', 'ann@example.test'])
  t.equal(reset.code, 0)
  t.match(reset.stdout, /^[0-9a-f]{40}\n$/, 'the new value alone')
  const fresh = reset.stdout.trim()
  t.not(fresh, value)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })).statusCode, 401, 'the old value stops at once')
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': fresh } })).statusCode, 200)
  t.same(await run(['legacy-token', 'show', 'ann@example.test']), { code: 0, stdout: reset.stdout, stderr: 'expires 2027-03-31 12:00 UTC\n' })

  clock.advanceDays(366)
  t.equal((await run(['legacy-token', 'show', 'ann@example.test'])).stderr, 'expired 2027-03-31 12:00 UTC\n')
})

t.test('site multipass-key: show, --rotate, --set; the server takes tokens made with it', async (t) => {
  const { run, appDatabase, clock } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  await run(['user', 'add', 'ann@example.test'])
  await run(['staff', 'add', 'demo', 'ann@example.test'])
  const first = await run(['site', 'multipass-key', 'demo'])
  t.equal(first.code, 0)
  t.match(first.stdout, /^[0-9a-f]{32}\n$/)
  t.equal((await run(['site', 'multipass-key', 'demo'])).stdout, first.stdout, 'shown, not changed')
  const rotated = await run(['site', 'multipass-key', 'demo', '--rotate'])
  t.match(rotated.stdout, /^[0-9a-f]{32}\n$/)
  t.not(rotated.stdout, first.stdout)
  t.same(await run(['site', 'multipass-key', 'demo', '--set', 'key-from-our-old-host']), { code: 0, stdout: 'key-from-our-old-host\n', stderr: '' })
  t.equal((await run(['site', 'multipass-key', 'demo'])).stdout, 'key-from-our-old-host\n')

  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...appDatabase }, clock })
  t.teardown(() => app.close())
  const token = makeMultipass({ email: 'ann@example.test', expires: '2030-01-01 00:00:00 UTC' }, 'key-from-our-old-host', 'demo')
  t.equal((await app.inject({ url: '/demo', headers: { 'x-multipass': token } })).statusCode, 200)
  await run(['site', 'multipass-key', 'demo', '--rotate'])
  t.equal((await app.inject({ url: '/demo', headers: { 'x-multipass': token } })).statusCode, 401, 'rotated: the old tokens stop at once')
})

t.test('SERVICE_SECRET instead of a key file; a wrong one cannot show the tokens', async (t) => {
  const { run, dir } = await cliRunner(t)
  const env = { SERVICE_SECRET: 'a'.repeat(64) }
  await run(['user', 'add', 'ann@example.test'], { env })
  t.notOk(existsSync(join(dir, 'service.key')), 'no key file when the secret is given')
  t.match((await run(['legacy-token', 'show', 'ann@example.test'], { env })).stdout, /^[0-9a-f]{40}\n$/)
  const wrong = await run(['legacy-token', 'show', 'ann@example.test'], { env: { SERVICE_SECRET: 'b'.repeat(64) } })
  t.equal(wrong.code, 1)
  t.equal(wrong.stderr, 'service-desk: the legacy API token cannot be shown: it was stored under another server key; reset it to make a new one\n')
  t.equal((await run(['legacy-token', 'reset', 'ann@example.test'], { env: { SERVICE_SECRET: 'b'.repeat(64) } })).code, 0, 'a reset mends it')
  const short = await run(['legacy-token', 'show', 'ann@example.test'], { env: { SERVICE_SECRET: 'short' } })
  t.equal(short.code, 2)
  t.match(short.stderr, /^service-desk: SERVICE_SECRET must be at least 32 characters/)
})

t.test('wrong input: one clear line, non-zero exit', async (t) => {
  const { run } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  const refusals: [string[], number, RegExp][] = [
    [['legacy-token', 'show', 'nobody@example.test'], 1, /there is no user "nobody@example.test"/],
    [['legacy-token', 'reset', 'nobody@example.test'], 1, /there is no user/],
    [['legacy-token', 'show'], 2, /usage: service-desk legacy-token show <email>/],
    [['site', 'multipass-key', 'nosite'], 1, /there is no site "nosite"/],
    [['site', 'multipass-key', 'demo', '--rotate', '--set', 'abcdefghij'], 2, /--rotate and --set cannot be combined/],
    [['site', 'multipass-key', 'demo', '--set', 'short'], 1, /a multipass key must be 8 to 256 visible characters/],
    [['site', 'multipass-key', 'demo', '--set', 'has spaces in it'], 1, /without spaces/],
  ]
  for (const [argv, code, message] of refusals) {
    const result = await run(argv)
    t.equal(result.code, code, argv.join(' '))
    t.match(result.stderr, message, argv.join(' '))
    t.match(result.stderr, /^service-desk: [^\n]+\n$/, 'one line')
    t.equal(result.stdout, '')
  }
})

t.test('--help names the commands', async (t) => {
  const { run } = await cliRunner(t)
  const overview = (await run(['--help'])).stdout
  for (const command of ['legacy-token show', 'legacy-token reset', 'site multipass-key']) {
    t.match(overview, `  ${command}`)
    t.match((await run([...command.split(' '), '--help'])).stdout, new RegExp(`^Usage: service-desk ${command}`))
  }
})
