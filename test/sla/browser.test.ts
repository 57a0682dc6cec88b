import t from 'tap'
import { supporterWithToken, V1 } from '../fixtures/app.ts'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'

// Engines: one: Chromium cannot tell the engines apart; the SLA's rules run on both in test/sla/policies.test.ts.
// Issue 68's walk, in Chromium: Ann, an administrator, writes the team's business hours and an SLA
// policy counted in them on Administration, then sorts the queue by due time and keeps the
// breached only; axe-core over the new page and the queue with its due column.

t.test('Ann promises a first reply in four business hours, then works the queue by due time', async (t) => {
  const { app, base, ann } = await listeningDesk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)

  const browser = await launchChromium(t)
  const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage()
  await signInOnPage(page, base, ann)
  await page.goto(`${base}/demo/admin/hours`)
  await page.getByLabel('Name').fill('Berlin')
  await page.getByLabel(/^Time zone/).fill('Europe/Berlin')
  await page.getByRole('button', { name: 'Add' }).click()
  await page.waitForURL(/done=added/)

  await page.getByRole('link', { name: 'SLA policies' }).click()
  await page.waitForURL(/\/admin\/sla$/)
  await noViolations(t, page, 'Administration -> SLA policies, empty')
  await page.getByLabel('Name').fill('Standard')
  await page.getByLabel('Counted in').selectOption({ label: 'Berlin' })
  await page.getByLabel('First reply').fill('240')
  await page.getByRole('button', { name: 'Add' }).click()
  await page.waitForURL(/done=added/)
  t.same((await page.locator('[data-policy="Standard"] td').allTextContents()).map((text) => text.trim()), ['1', 'every discussion', 'Berlin', '4 h', '—', '—', '30 min before', 'Remove'])
  await noViolations(t, page, 'Administration -> SLA policies, with a policy')
  // A refusal is said on the page, the form kept.
  await page.getByLabel('Name').fill('Standard')
  await page.getByLabel('First reply').fill('10')
  await page.getByRole('button', { name: 'Add' }).click()
  t.match(await page.getByRole('alert').textContent(), /already/)
  t.equal(await page.getByLabel('First reply').inputValue(), '10')

  const created = await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: { ...api.bearer, accept: V1 }, payload: { title: 'Export fails', body: 'It stops at 1000 rows.', author_email: 'carol@customer.example' } })
  const due = created.json().sla.first_reply_due_at as string
  await page.goto(`${base}/demo/discussions`)
  await page.getByLabel('Order').selectOption({ label: 'Due time' })
  await page.getByRole('button', { name: 'Show' }).click()
  await page.waitForURL(/sort=due/)
  t.match(await page.getByRole('heading', { level: 2 }).first().textContent(), /the soonest due first/)
  t.equal((await page.locator('[data-due]').first().textContent())?.trim(), `${due.slice(0, 10)} ${due.slice(11, 16)} UTC`, 'the due time shown')
  await noViolations(t, page, 'the queue by due time')
  await page.getByLabel('SLA breached only').check()
  await page.getByRole('button', { name: 'Show' }).click()
  await page.waitForURL(/sla=breached/)
  t.match(await page.locator('body').textContent(), /No discussion here\./, 'nothing breached yet')
})
