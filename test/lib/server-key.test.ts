import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { keyFileFor, serverSecret } from '../../lib/server-key.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

function tempDir(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-key-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('SERVICE_SECRET wins; an in-memory database gets a random key of its own', async (t) => {
  t.equal(serverSecret({ secret: 's'.repeat(40), databaseAddress: '/nowhere/service.db' }), 's'.repeat(40))
  const a = serverSecret({ databaseAddress: ':memory:' })
  t.match(a, /^[0-9a-f]{64}$/)
  t.not(serverSecret({ databaseAddress: ':memory:' }), a)
})

t.test('a key file is made on first start, mode 0600, beside the database, and kept', async (t) => {
  const dir = tempDir(t)
  const databaseAddress = join(dir, 'data', 'service.db')
  t.equal(keyFileFor(databaseAddress), join(dir, 'data', 'service.key'))
  const first = serverSecret({ databaseAddress })
  t.match(first, /^[0-9a-f]{64}$/)
  t.equal(statSync(keyFileFor(databaseAddress)).mode & 0o777, 0o600)
  t.equal(readFileSync(keyFileFor(databaseAddress), 'utf8'), `${first}\n`)
  t.equal(serverSecret({ databaseAddress }), first, 'the same key on every later start')
  t.same(readdirSync(join(dir, 'data')), ['service.key'], 'no temporary file is left behind')
})

t.test('a damaged key file stops start-up with one clear line', async (t) => {
  const dir = tempDir(t)
  writeFileSync(join(dir, 'service.key'), 'short\n')
  t.throws(() => serverSecret({ databaseAddress: join(dir, 'service.db') }), {
    name: 'ConfigError',
    message: `the key file ${join(dir, 'service.key')} must hold at least 32 characters; restore it or set SERVICE_SECRET`,
  })
  mkdirSync(join(dir, 'folder', 'service.key'), { recursive: true })
  t.throws(() => serverSecret({ databaseAddress: join(dir, 'folder', 'service.db') }), { code: 'EISDIR' }, 'a key path that is a folder')
})

t.test('an existing key file is only read: nothing is written beside it', async (t) => {
  const dir = tempDir(t)
  const databaseAddress = join(dir, 'service.db')
  const first = serverSecret({ databaseAddress })
  const written: string[] = []
  const { serverSecret: mocked } = await t.mockImport<typeof import('../../lib/server-key.ts')>('../../lib/server-key.ts', {
    'node:fs': {
      ...(await import('node:fs')),
      writeFileSync: (path: string, ...rest: unknown[]) => {
        written.push(path)
        return (writeFileSync as (...args: unknown[]) => void)(path, ...rest)
      },
    },
  })
  t.equal(mocked({ databaseAddress }), first)
  t.same(written, [], 'no temporary file, so a full or read-only disk does not stop the start')
})

t.test('a key made by a racing process between the look and the link wins', async (t) => {
  const dir = tempDir(t)
  const databaseAddress = join(dir, 'service.db')
  const first = serverSecret({ databaseAddress })
  // The other process's key appears after this one looked: the link finds it and keeps it.
  const { serverSecret: racing } = await t.mockImport<typeof import('../../lib/server-key.ts')>('../../lib/server-key.ts', {
    'node:fs': { ...(await import('node:fs')), existsSync: () => false },
  })
  t.equal(racing({ databaseAddress }), first, 'the existing key is kept, never replaced')
  t.same(readdirSync(dir).sort(), ['service.key'], 'and the temporary file is gone')
})

t.test('a PostgreSQL database has no data folder: it needs SERVICE_SECRET, and no key file is made', async (t) => {
  const dir = tempDir(t)
  const cwd = process.cwd()
  process.chdir(dir)
  t.teardown(() => process.chdir(cwd))
  for (const databaseAddress of ['postgres://desk@127.0.0.1:5432/desk', 'postgresql://desk@db.example.com/desk?schema=help']) {
    t.throws(() => serverSecret({ databaseAddress }), {
      name: 'ConfigError',
      message: 'a PostgreSQL database needs SERVICE_SECRET, the same in every process (there is no data folder for a key file)',
    }, databaseAddress)
    t.equal(serverSecret({ secret: 's'.repeat(40), databaseAddress }), 's'.repeat(40), 'with it, the secret is the key')
  }
  t.same(readdirSync(dir), [], 'no key file beside a would-be path')
})
