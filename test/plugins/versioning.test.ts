import Fastify from 'fastify'
import t from 'tap'
import versioning from '../../plugins/versioning.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'

// Engines: one: what the service says of itself (documents, versions, a generated client) is the same on either engine.

t.test('Accept negotiation on an authenticated route', async (t) => {
  const { app } = await buildTestApp(t)
  const { value } = await supporterWithToken(app)
  const get = (accept?: string) =>
    app.inject({ url: '/demo/discussions', headers: { authorization: `Bearer ${value}`, ...(accept === undefined ? {} : { accept }) } })

  const v1 = await get(V1)
  t.equal(v1.statusCode, 200)
  t.equal(v1.headers['content-type'], `${V1}; charset=utf-8`, 'v1 asked, v1 labelled')
  t.equal(v1.headers.vary, 'Accept, Authorization, X-Service-Auth, X-Multipass')
  t.match(v1.json(), { per_page: 30 })

  for (const accept of [undefined, 'application/json', '*/*']) {
    const res = await get(accept)
    t.equal(res.statusCode, 200, `Accept: ${accept}`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `Accept: ${accept}`)
    t.same(res.json(), v1.json(), 'the same version 1 document')
  }

  for (const accept of ['application/vnd.service-v2+json', 'text/html', 'application/xml']) {
    const res = await get(accept)
    t.equal(res.statusCode, 406, `Accept: ${accept}`)
    t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
    t.match(res.body, 'application/vnd.service-v1+json')
    t.match(res.body, 'application/json')
    t.equal(res.headers.vary, 'Accept, Authorization, X-Service-Auth, X-Multipass')
    t.equal(res.headers['cache-control'], 'no-store', 'a 406 is private too')
  }
})

t.test('an unacceptable version is told before any credential is asked for', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/demo', headers: { accept: 'application/vnd.service-v2+json' } })
  t.equal(res.statusCode, 406)
  t.notOk(res.headers['www-authenticate'])
})

t.test('refusals keep their plain-text type whatever the Accept', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/demo', headers: { accept: V1 } })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(res.headers.vary, 'Accept, Authorization, X-Service-Auth, X-Multipass')
})

t.test('on its own, the plugin names Accept alone in Vary', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(versioning)
  app.get('/', async () => ({ ok: true }))
  const res = await app.inject({ url: '/', headers: { accept: V1 } })
  t.equal(res.headers.vary, 'Accept')
  t.equal(res.headers['content-type'], `${V1}; charset=utf-8`)
})
