import t from 'tap'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: Chromium cannot tell the engines apart; the stream's presence across apps on one database runs on both in test/team/live.test.ts.
// Issue 71, who is here, in Chromium: two supporters on one discussion's page. Bob sees Ann there,
// sees "Ann is replying" within two seconds of her typing, and sees her gone once she leaves.

t.test('Bob sees Ann on the page, sees her replying within two seconds of her typing, and not once she left', async (t) => {
  const { app, base, ann } = await listeningDesk(t)
  const bob = await personWithPassword(app, { email: 'bob@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer on fire', body: 'It smokes.', supporterId: ann.user.id, onBehalfOf: { email: 'carla@example.test', name: 'Carla' }, via: 'api' })
  // Its custom fields of every kind, so that axe-core looks at their form too (issue 72).
  const by = { id: ann.user.id, name: ann.user.email, via: 'api' as const }
  for (const [key, kind, choices] of [['order_number', 'text'], ['seats', 'number'], ['renewal', 'date'], ['plan', 'choice', ['Basic', 'Pro']], ['products', 'choices', ['Desk', 'Chat']], ['vip', 'yes_no'], ['crm', 'link']] as const) {
    await app.fields.add(ann.site.id, { key, name: key.replace('_', ' '), kind, choices: choices ? [...choices] : undefined }, by)
  }
  await app.discussions.update(ann.site.id, 1, { fields: { order_number: 'A-1002', plan: 'Pro', products: ['Chat'], vip: true } })
  const browser = await launchChromium(t)
  const [annsPage, bobsPage] = await Promise.all([0, 1].map(async () => (await browser.newContext({ viewport: { width: 1000, height: 900 } })).newPage()))
  await signInOnPage(annsPage!, base, ann)
  await signInOnPage(bobsPage!, base, bob)
  await bobsPage!.goto(`${base}/demo/discussions/1`)
  const shown = bobsPage!.locator('[data-presence]')
  t.equal(await shown.isHidden(), true, 'alone: nothing said')
  await annsPage!.goto(`${base}/demo/discussions/1`)
  await shown.getByText(`${ann.user.name} is viewing this discussion`).waitFor({ timeout: 2_000 })
  t.pass('Ann is there')
  await noViolations(t, bobsPage!, 'a discussion page saying who else is on it, with its fields and their form')

  const started = Date.now()
  await annsPage!.locator('#reply-body').pressSequentially('On my way', { delay: 20 })
  await shown.getByText(`${ann.user.name} is replying`).waitFor({ timeout: 2_000 })
  t.pass(`Bob sees Ann replying within two seconds (${Date.now() - started} ms)`)
  t.equal(await annsPage!.locator('[data-presence]').textContent(), `${bob.user.name} is viewing this discussion`, 'and Ann sees Bob, not herself')

  await annsPage!.close()
  await shown.waitFor({ state: 'hidden', timeout: 3_000 })
  t.equal(await shown.textContent(), '', 'Ann left: nobody else is there')
})
