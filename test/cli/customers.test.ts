import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL, V1 } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { unzip } from '../fixtures/zip.ts'

// Engines: one: the command writes what the store reads (test/privacy/export.test.ts reads it on both engines).
// A customer's export on the command line (cli/customers.ts; issue 74): the ZIP written to a new
// file, never over one; the record of changes says the operator did it; no customer, no file. Their
// erasure (a dry run first) and the site's privacy settings.

t.test('customer export writes the ZIP to a new file, customer erase erases them, site privacy sets how', async (t) => {
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

  // The erasure: the site's settings, a dry run, then the erasure; the address is gone, the line stays without it.
  t.match((await run(['site', 'privacy', 'demo'])).stdout, 'erasure: anonymise\nretention: off\n')
  t.match((await run(['site', 'privacy', 'demo', '--erasure', 'delete', '--retention-months', '24'])).stdout, 'erasure: delete\nretention: 24 months (0 discussions due now)\n')
  t.match((await run(['site', 'privacy', 'demo', '--erasure', 'shred'])).stderr, '--erasure must be anonymise or delete')
  t.match((await run(['site', 'privacy', 'demo', '--retention-months', '0'])).stderr, '--retention-months must be off or a whole number from 1 to 120')
  t.match((await run(['site', 'privacy', 'demo', '--retention-months', 'off'])).stdout, 'retention: off')
  const dry = await run(['customer', 'erase', 'demo', 'carol@customer.example', '--dry-run'])
  t.equal(dry.stdout, 'would erase carol@customer.example: 1 discussions they started (deleted), 0 others they wrote in or were copied on, 1 comments, 0 files, 0 mails; their account removed\n')
  const erased = await run(['customer', 'erase', 'demo', 'carol@customer.example'])
  t.equal(erased.code, 0, erased.stderr)
  t.match(erased.stdout, /^erased carol@customer\.example: 1 discussions/)
  t.match((await run(['customer', 'erase', 'demo', 'carol@customer.example'])).stderr, 'is no customer of demo')
  const record = (await run(['audit', 'demo'])).stdout
  t.match(record, /customer\.erased/)
  t.notMatch(record, /carol@customer\.example/, 'the record keeps the export, without her address')
  t.match((await app.inject({ method: 'GET', url: '/demo/discussions/1', headers })).json(), { state: 'deleted', title: '(deleted)' })
})
