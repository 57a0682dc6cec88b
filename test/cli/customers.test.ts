import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL, V1 } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { unzip } from '../fixtures/zip.ts'

// Engines: one: the command writes what the store reads (test/privacy/export.test.ts reads it on both engines).
// A customer's export on the command line (cli/customers.ts; issue 74): the ZIP written to a new
// file, never over one; the record of changes says the operator did it; no customer, no file.

t.test('customer export writes the ZIP to a new file, and refuses an address that is no customer', async (t) => {
  const { run, appDatabase, dir, clock } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  await run(['user', 'add', 'ann@example.test'])
  await run(['staff', 'add', 'demo', 'ann@example.test'])
  await run(['staff', 'admin', 'demo', 'ann@example.test'])
  const token = (await run(['token', 'create', 'demo', 'ann@example.test', '--name', 'cli', '--access', 'write'])).stdout.trim().split(/\s/)[0]!
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...appDatabase }, clock })
  t.teardown(() => app.close())
  const headers = { authorization: `Bearer ${token}`, accept: V1 }
  const category = (await app.inject({ method: 'POST', url: '/demo/categories', headers, payload: { name: 'General', public: true } })).json()
  const made = await app.inject({ method: 'POST', url: `/demo/categories/${category.id}/discussions`, headers, payload: { title: 'Help', body: 'Carol asks.', author_email: 'carol@customer.example' } })
  t.equal(made.statusCode, 201, made.body)

  const file = join(dir, 'carol.zip')
  const exported = await run(['customer', 'export', 'demo', 'Carol@customer.example', file])
  t.equal(exported.code, 0, exported.stderr)
  t.equal(exported.stdout, `${file}: 1 discussions and 0 files of carol@customer.example\n`)
  const zip = readFileSync(file)
  t.equal(zip.subarray(0, 4).toString('hex'), '504b0304', 'a ZIP')
  t.match((await unzip(zip)).get('discussions/1.json')?.toString(), /Carol asks\./, 'her text in it')
  t.match((await run(['customer', 'export', 'demo', 'carol@customer.example', file])).stderr, /EEXIST|exists/, 'never over a file')
  t.match((await run(['customer', 'export', 'demo', 'ann@example.test', join(dir, 'ann.zip')])).stderr, 'ann@example.test is no customer of demo')
  t.match((await run(['customer', 'export', 'demo', 'nobody@example.test', join(dir, 'nobody.zip')])).stderr, 'is no customer of demo')
  t.match((await run(['audit', 'demo', '--action', 'customer.exported'])).stdout, /customer\.exported.*carol@customer\.example/)
})
