import { createServer, connect, type Server, type Socket } from 'node:net'
import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { addCategory } from '../fixtures/discussions.ts'
import { postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'

// Engines: both: PostgreSQL going away under a running service.
// PostgreSQL going away under a running service (a restart, a failover, a cut network): every
// request that needs it gets 503 with Retry-After, never a 500, nothing half-written stays, and the
// service serves again as soon as the server answers, without a restart. The "server" here is a
// real PostgreSQL behind a TCP relay the test cuts and restores.

/** A relay from a local port to PostgreSQL that can be cut (every connection dropped) and restored. */
async function relay(target: { host: string; port: number }) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(target.port, target.host)
        for (const s of [client, upstream]) {
          sockets.add(s)
          s.on('close', () => sockets.delete(s))
          s.on('error', () => s.destroy())
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as { port: number }).port
        resolve()
      })
    })
  await open()
  return {
    get port() {
      return port
    },
    /** Stops listening and drops every connection, as a server that went away. */
    cut: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server!.close(() => resolve())
      }),
    restore: open,
  }
}

t.test('PostgreSQL goes away: 503 with Retry-After, nothing half-written; it comes back: the service serves again', {
  skip: TEST_ENGINE !== 'postgres' && 'about PostgreSQL; runs in the PostgreSQL run of the suite',
}, async (t) => {
  const direct = new URL(await postgresTestAddress(t))
  const link = await relay({ host: direct.hostname, port: Number(direct.port || 5432) })
  t.teardown(() => link.cut())
  const viaRelay = new URL(direct)
  viaRelay.hostname = '127.0.0.1'
  viaRelay.port = String(link.port)
  const { app } = await buildTestApp(t, { config: { databaseAddress: viaRelay.toString(), postgres: { connectTimeoutMs: 1000 } } })
  const ann = await supporterWithToken(app)
  const category = await addCategory(app, ann.site.id, 'General')
  const create = () =>
    app.inject({
      method: 'POST',
      url: `/demo/categories/${category.id}/discussions`,
      headers: { ...ann.bearer, 'content-type': 'application/json' },
      payload: { title: 'During the outage', body: 'Is anyone there?' },
    })
  t.equal((await create()).statusCode, 201, 'served while the server answers')

  await link.cut()
  for (const [what, answer] of [
    ['a read', await app.inject({ url: '/demo/discussions', headers: ann.bearer })],
    ['a write', await create()],
    ['the health check', await app.inject({ url: '/healthz' })],
    ['a page', await app.inject({ url: '/demo/login' })],
  ] as const) {
    t.equal(answer.statusCode, 503, `${what}: 503`)
    t.match(answer.headers['retry-after'], /^\d+$/, `${what}: Retry-After`)
  }
  const refused = await create()
  const page = await app.inject({ url: '/demo/login' })
  t.equal(page.body, 'The database cannot be reached right now. Try again in a moment.\n', 'the page says why, without a site to draw it in')
  t.same(refused.json(), { error: 'service_unavailable', message: 'The database cannot be reached right now. Try again in a moment.' })

  await link.restore()
  const again = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(again.statusCode, 200, 'served again once the server answers, without a restart')
  t.same(
    again.json().discussions.map((d: { title: string }) => d.title),
    ['During the outage'],
    'only the discussion created before the cut exists: nothing half-written from the refused writes',
  )
  t.equal((await create()).statusCode, 201, 'writes work again')
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
})
