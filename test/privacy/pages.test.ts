import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { signedInPerson } from '../fixtures/web.ts'
import { unzip } from '../fixtures/zip.ts'

// Engines: one: the page calls the stores test/privacy/erasure.test.ts runs on both engines.
// Administration -> Customers' data (routes/web/admin-privacy.ts; issue 74): an administrator finds
// a customer by a posted form (their address in no URL), reads what erasing them would do,
// downloads their data, erases them after ticking that it cannot be undone, and sets the site's
// erasure and retention; a supporter, another site's administrator and a stale session are refused.

t.test("an administrator finds a customer, downloads their data and erases them on the page", async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Lost parcel', body: 'Carol Quintessa here.', via: 'api', supporterId: ann.user.id, onBehalfOf: { email: 'carol.q@customer.example', name: 'Carol Quintessa' } })
  const web = ann.web

  const page = await web.get('/demo/admin/privacy')
  t.equal(page.statusCode, 200)
  t.match(page.body, /Customers' data/)
  t.match(page.body, /kept without them/)
  const missing = await web.post('/demo/admin/privacy/find', { email: 'nobody@example.test' })
  t.match(missing.body, 'No customer of this site has that address.')
  const found = await web.post('/demo/admin/privacy/find', { email: 'CAROL.Q@customer.example' })
  t.equal(found.statusCode, 200)
  t.match(found.body, /Carol Quintessa · carol\.q@customer\.example/)
  t.match(found.body, /the <strong>1<\/strong> discussion they started/)
  const carolId = Number(/admin\/privacy\/(\d+)\/erase/.exec(found.body)![1])

  const zipped = await web.post(`/demo/admin/privacy/${carolId}/export`)
  t.equal(zipped.statusCode, 200)
  t.equal(zipped.headers['content-type'], 'application/zip')
  t.match((await unzip((zipped as unknown as { rawPayload: Buffer }).rawPayload)).get('discussions/1.json')?.toString(), /Carol Quintessa here/)

  await web.post('/demo/admin/privacy/find', { email: 'carol.q@customer.example' })
  const unticked = await web.post(`/demo/admin/privacy/${carolId}/erase`)
  t.equal(unticked.statusCode, 400)
  t.match(unticked.body, /cannot be undone/)
  t.equal((await web.post('/demo/admin/privacy/99999/erase', { understood: 'yes' })).statusCode, 404)
  t.equal((await web.post('/demo/admin/privacy/99999/export')).statusCode, 404)
  t.equal((await web.post('/demo/admin/privacy/abc/export')).statusCode, 404)
  t.equal((await web.post('/demo/admin/privacy/abc/erase', { understood: 'yes' })).statusCode, 404)
  const erased = await web.post(`/demo/admin/privacy/${carolId}/erase`, { understood: 'yes' })
  t.equal(erased.statusCode, 303)
  t.match((await web.get(erased.headers.location as string)).body, /The customer is erased/)
  t.equal(await app.users.find('carol.q@customer.example'), undefined)
  t.match((await web.post('/demo/admin/privacy/find', { email: 'carol.q@customer.example' })).body, 'No customer of this site has that address.')

  // The settings: refused in words, then saved, and on record.
  await web.get('/demo/admin/privacy')
  t.equal((await web.post('/demo/admin/privacy', { erasure: 'shred' })).statusCode, 400)
  t.equal((await web.post('/demo/admin/privacy', { erasure: 'delete', retention_months: '0' })).statusCode, 400)
  t.equal((await web.post('/demo/admin/privacy', { erasure: 'delete', retention_months: 'ten' })).statusCode, 400)
  const saved = await web.post('/demo/admin/privacy', { erasure: 'delete', retention_months: '18' })
  t.equal(saved.statusCode, 303)
  const after = (await web.get(saved.headers.location as string)).body
  t.match(after, /The privacy settings are saved/)
  t.match(after, /value="delete" checked/)
  t.match(after, /value="18"/)
  t.match(after, /0 discussions are past the age now/)
  t.match(await app.erasure.settings(ann.site.id), { erasureMode: 'delete', retentionMonths: 18 })
  await web.get('/demo/admin/privacy')
  t.equal((await web.post('/demo/admin/privacy', { erasure: 'anonymise', retention_months: '' })).statusCode, 303)
  t.match((await web.get('/demo/admin/privacy')).body, /The discussions are kept\./)

  // A session not confirmed lately is sent to confirm first; nothing is changed meanwhile.
  clock.advance(60 * 60 * 1000)
  await web.get('/demo/admin/privacy')
  const stale = await web.post('/demo/admin/privacy', { erasure: 'delete' })
  t.equal(stale.statusCode, 303)
  t.match(stale.headers.location, /\/demo\/confirm/)
  t.equal((await app.erasure.settings(ann.site.id)).erasureMode, 'anonymise')
})

t.test("the page's outsiders: a supporter, another site's administrator", async (t) => {
  const { app } = await buildTestApp(t)
  const bob = await signedInPerson(app, { email: 'bob@example.test' })
  t.equal((await bob.web.get('/demo/admin/privacy')).statusCode, 403)
  const olga = await signedInPerson(app, { administrator: true, site: 'other', email: 'olga@other.example' })
  await olga.web.get('/other/admin/privacy')
  // Her form's token and session are the other site's: the demo site's page does not take them.
  t.not((await olga.web.post('/demo/admin/privacy/find', { email: 'bob@example.test' })).statusCode, 200)
  t.equal((await olga.web.get('/demo/admin/privacy')).statusCode, 303, 'signed in on another site only: sent to sign in')
})
