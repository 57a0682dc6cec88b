import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { signedInPerson } from '../fixtures/web.ts'

// Engines: both: a category removed moves its discussions, counts and mailboxes in one transaction, which each engine must keep alike.
// Issue 67, item 3: categories made, changed and removed through the API by the site's
// administrators (docs/decisions.md, "Categories"); a category with discussions is merged into
// another, never deleted with them. From the other side: a supporter, another site's
// administrator, a bad name, merging into itself, into nothing, and the site's last category.

t.test('an administrator makes, renames and merges a category; a supporter and another site cannot', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const site = ann.site
  await app.users.setAdministrator(site.id, ann.user.id, true)
  const general = await app.categories.add(site.id, 'General', true)
  const call = async (who: { bearer: Record<string, string> }, method: string, url: string, payload?: unknown) => {
    const answer = await app.inject({ method: method as 'GET', url, headers: { ...who.bearer, accept: V1 }, ...(payload !== undefined && { payload: payload as object }) })
    return { status: answer.statusCode, body: answer.body === '' ? null : answer.json(), location: answer.headers.location }
  }

  const made = await call(ann, 'POST', '/demo/categories', { name: '  Billing ', round_robin: true })
  t.equal(made.status, 201)
  t.match(made.body, { name: 'Billing', permalink: 'billing', public: false, round_robin: true, discussions_count: 0 })
  t.equal(made.location, made.body.href)
  const billing = made.body.id as number
  t.equal((await call(bob, 'POST', '/demo/categories', { name: 'Mine' })).status, 403, 'a supporter makes none')
  for (const name of ['', 'x'.repeat(101), 'A\u0000B']) t.equal((await call(ann, 'POST', '/demo/categories', { name })).status, 400, `name ${JSON.stringify(name.slice(0, 5))}`)
  t.equal((await call(ann, 'POST', '/demo/categories', { name: 'Billing' })).body.permalink, 'billing-2', 'a taken name gets its own permalink')

  const renamed = await call(ann, 'PATCH', `/demo/categories/${billing}`, { name: 'Invoices', public: true })
  t.equal(renamed.status, 200)
  t.match(renamed.body, { name: 'Invoices', permalink: 'billing', public: true, round_robin: true }, 'renamed, its address kept')
  t.equal((await call(ann, 'PATCH', `/demo/categories/${billing}`, {})).status, 400, 'a change names something')
  t.equal((await call(bob, 'PATCH', `/demo/categories/${billing}`, { name: 'Mine' })).status, 403)

  // Two discussions in it (one resolved), a mailbox filing into it.
  for (const title of ['Invoice wrong', 'Refund']) {
    t.equal((await call(ann, 'POST', `/demo/categories/${billing}/discussions`, { title, body: 'Words.' })).status, 201)
  }
  await call(ann, 'POST', '/demo/discussions/2/resolve')
  const mailbox = await app.mailboxes.addMailbox(site.id, 'billing@demo.example', { categoryId: billing })
  const feedBefore = (await call(ann, 'GET', '/demo/changes')).body.changes.length as number

  // From the other side: removed without a place for them, into itself, into nowhere, by a supporter, by another site.
  const refused = await call(ann, 'DELETE', `/demo/categories/${billing}`)
  t.equal(refused.status, 409)
  t.match(refused.body.message, /Holds 2 discussions: name the category they move into/)
  t.equal((await call(ann, 'DELETE', `/demo/categories/${billing}?into=${billing}`)).status, 400)
  t.equal((await call(ann, 'DELETE', `/demo/categories/${billing}?into=999999`)).status, 400)
  t.equal((await call(bob, 'DELETE', `/demo/categories/${billing}?into=${general.id}`)).status, 403)
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  await app.users.setAdministrator(otto.site.id, otto.user.id, true)
  t.equal((await call(otto, 'DELETE', `/other/categories/${billing}?into=${general.id}`)).status, 404, "another site's administrator finds no such category")
  t.equal((await call(ann, 'GET', `/demo/categories/${billing}`)).status, 200, 'still there')

  t.equal((await call(ann, 'DELETE', `/demo/categories/${billing}?into=${general.id}`)).status, 204)
  t.equal((await call(ann, 'GET', `/demo/categories/${billing}`)).status, 404)
  for (const number of [1, 2]) t.equal((await call(ann, 'GET', `/demo/discussions/${number}`)).body.category_href, `https://api.example.test/demo/categories/${general.id}`, `#${number} moved`)
  t.match((await call(ann, 'GET', `/demo/categories/${general.id}`)).body, { discussions_count: 2 }, 'its counts followed')
  const feed = (await call(ann, 'GET', '/demo/changes')).body.changes as Array<{ type: string }>
  t.same(feed.slice(feedBefore).map((c) => c.type), ['discussion.updated', 'discussion.updated'], 'each move is told in the change feed')
  t.equal((await app.mailboxes.listMailboxes(site.id)).find((m) => m.id === mailbox.id)!.categoryId, general.id, 'its mailbox files into General now')

  // An empty one goes without a place; the site's last one stays.
  const second = (await call(ann, 'GET', '/demo/categories')).body.categories.find((c: { name: string }) => c.name === 'Billing')
  t.equal((await call(ann, 'DELETE', `/demo/categories/${second.id}`)).status, 204, 'an empty category needs no place')
  const last = await call(ann, 'DELETE', `/demo/categories/${general.id}`)
  t.equal(last.status, 409)
  t.match(last.body.message, /last category/)
})

t.test('Administration -> Categories: add, rename, make public, merge; each refusal said on the page', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const site = ann.site
  const general = await app.categories.add(site.id, 'General', true)
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  await ann.web.get('/demo/admin/categories')
  t.equal((await ann.web.post('/demo/admin/categories', { name: 'Billing' })).headers.location, 'https://help.example.test/demo/admin/categories?done=added')
  const billing = (await app.categories.list(site.id, 0, -1)).categories.find((c) => c.name === 'Billing')!
  t.equal(billing.public, false, 'private unless ticked')
  await app.inject({ method: 'POST', url: `/demo/categories/${billing.id}/discussions`, headers: { ...api.bearer, accept: V1 }, payload: { title: 'Invoice', body: 'Words.' } })
  const page = await ann.web.get('/demo/admin/categories')
  t.match(page.body, /data-category="Billing"[\s\S]*?1 discussion</)
  t.match(page.body, /Move its discussions into/)

  const refused = [
    [`/demo/admin/categories/${billing.id}`, { name: '' }, 400, /The category a category name must be 1 to 100 characters/],
    ['/demo/admin/categories/999999', { name: 'Gone' }, 404, /The category is not one of this site/],
    [`/demo/admin/categories/${billing.id}`, { remove: 'yes' }, 409, /The category holds 1 discussion: name the category they move into/],
    [`/demo/admin/categories/${billing.id}`, { remove: 'yes', into: 'x' }, 400, /Where its discussions go is 0, which is not a category of this site/],
    ['/demo/admin/categories', { name: 'x'.repeat(101) }, 400, /The category a category name must be 1 to 100 characters/],
  ] as const
  for (const [path, form, status, words] of refused) {
    const answer = await ann.web.post(path, form)
    t.equal(answer.statusCode, status, `${path} ${JSON.stringify(form).slice(0, 40)}`)
    t.match(answer.body, words)
  }
  t.equal((await ann.web.post(`/demo/admin/categories/${billing.id}`, { name: 'Invoices', public: 'yes' })).statusCode, 303)
  t.match(await app.categories.find(site.id, billing.id), { name: 'Invoices', public: true })
  t.equal((await ann.web.post(`/demo/admin/categories/${billing.id}`, { remove: 'yes', into: String(general.id) })).headers.location, 'https://help.example.test/demo/admin/categories?done=removed')
  t.match(await app.discussions.get(site.id, 1), { categoryId: general.id })
  t.match((await ann.web.get('/demo/admin/categories?done=removed')).body, /The category is removed; its discussions moved\./)
  t.notMatch((await ann.web.get('/demo/admin/categories')).body, /aria-label="Remove General"/, 'the last one offers no removal')
})
