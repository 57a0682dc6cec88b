import t from 'tap'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Search in Debian's Chromium (routes/web/search.ts): a supporter types a query into the queue's
// search box and finds the discussion by a word of a reply, the words marked; a query that cannot
// be read says why, the text kept; a visitor searches the support site. axe-core on each page.

t.test('a supporter finds a discussion from the queue by a word of its reply; a visitor searches the public ones', async (t) => {
  const { app, base, ann } = await listeningDesk(t)
  const general = await app.categories.add(ann.site.id, 'General', true)
  const open = async (title: string, body: string, isPublic: boolean) =>
    (await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title, body, public: isPublic, supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example', name: 'Carol' }, via: 'api' })).discussion.number
  const printer = await open('Printer on fire', 'The office printer smokes.', false)
  await app.discussions.reply({ siteId: ann.site.id, number: printer, body: 'We sent a technician with an extinguisher.', internal: false, supporterId: ann.user.id, via: 'api' })
  await open('Café Wi-Fi', 'The wifi in the café is slow.', true)

  const browser = await launchChromium(t)
  const page = await (await browser.newContext()).newPage()
  await signInOnPage(page, base, ann)
  await page.getByRole('searchbox', { name: 'Search' }).fill('extinguisher')
  await page.getByRole('searchbox', { name: 'Search' }).press('Enter')
  await page.waitForURL(`${base}/demo/search?q=extinguisher`)
  t.equal(await page.getByRole('heading', { level: 2 }).textContent(), '1 discussion match "extinguisher"')
  t.equal(await page.locator('[data-results] mark').textContent(), 'extinguisher', 'the word marked in the snippet')
  t.equal(await page.locator('[data-results] mark').evaluate((mark) => (globalThis as unknown as { getComputedStyle(e: unknown): { fontWeight: string } }).getComputedStyle(mark).fontWeight), '600')
  await noViolations(t, page, "the staff's search page, with a result")
  await page.getByRole('link', { name: 'Printer on fire' }).click()
  await page.waitForURL(`${base}/demo/discussions/${printer}`)

  await page.goto(`${base}/demo/search?q=${encodeURIComponent('"on fire')}`)
  t.equal(await page.getByRole('alert').textContent(), 'The search has a quote that is not closed.')
  t.equal(await page.getByRole('searchbox', { name: 'Search' }).inputValue(), '"on fire', 'the query kept, to mend')
  await noViolations(t, page, 'a search that cannot be read')

  const visitor = await (await browser.newContext()).newPage()
  await visitor.goto(`${base}/demo/help`)
  await visitor.getByRole('searchbox', { name: 'Search' }).fill('cafe')
  await visitor.getByRole('button', { name: 'Search' }).click()
  await visitor.waitForURL(`${base}/demo/help/search?q=cafe`)
  t.same(await visitor.locator('[data-results] li > a').allTextContents(), ['Café Wi-Fi'], 'the public one, found without its accent')
  t.equal(await visitor.getByText('Printer on fire').count(), 0, "Carol's private one is not a visitor's")
  await noViolations(t, visitor, "the support site's search page")
})
