import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import readmeRoute from '../../routes/readme.ts'
import { buildTestApp } from '../fixtures/app.ts'

// Engines: one: what the service says of itself (documents, versions, a generated client) is the same on either engine.

t.test('{base_url}/README.md serves the README the deprecation link points into', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-readme-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'README.md'), '# Service Desk\n\n## Migrating from multipass to personal tokens\n')
  const app = Fastify()
  t.teardown(() => app.close())
  app.register(readmeRoute, { file: join(dir, 'README.md') })
  const res = await app.inject({ url: '/README.md' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/markdown; charset=utf-8')
  t.match(res.body, '## Migrating from multipass to personal tokens')
})

t.test('without a README the address is a plain 404', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.register(readmeRoute, { file: '/nonexistent/README.md' })
  t.equal((await app.inject({ url: '/README.md' })).statusCode, 404)
})

t.test('in the app, it is a public document, never a site', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/README.md' })
  t.not(res.statusCode, 401, 'no credential is asked for')
})
