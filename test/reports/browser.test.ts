import { readFileSync } from 'node:fs'
import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'

// Engines: one: Chromium cannot tell the engines apart; the reports' counts run on both in test/reports/reports.test.ts.
// Issue 69's walk, in Chromium: Ann opens Reports from the navigation, reads the volume by day
// (a chart drawn as SVG, no script), switches to the resolution time by supporter, and downloads
// the CSV; axe-core over the page at 1280 and at 360 pixels wide.

t.test('Ann reads the reports, as a chart and a table, on a wide screen and a phone', async (t) => {
  const { app, base, ann } = await listeningDesk(t)
  const api = await supporterWithToken(app, { email: ann.email })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const call = (method: 'POST', url: string, payload?: object) => app.inject({ method, url, headers: api.bearer, ...(payload ? { payload } : {}) })
  for (let i = 1; i <= 3; i++) {
    const made = await call('POST', `/demo/categories/${general.id}/discussions`, { title: `Question ${i}`, body: 'Help?', author_email: `c${i}@customer.test` })
    t.equal(made.statusCode, 201)
    t.equal((await call('POST', `/demo/discussions/${i}/comments`, { body: 'Answered.' })).statusCode, 201)
    t.equal((await call('POST', `/demo/discussions/${i}/resolve`)).statusCode, 200)
  }

  const browser = await launchChromium(t)
  for (const width of [1280, 360]) {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage()
    await signInOnPage(page, base, ann)
    await page.getByRole('navigation', { name: 'Site' }).getByRole('link', { name: 'Reports' }).click()
    await page.waitForURL(/\/demo\/reports$/)
    t.match(await page.getByRole('heading', { level: 2 }).textContent(), /^Volume by day, 2026-01-31 to 2026-03-01$/)
    t.equal(await page.locator('svg[role="img"]').count(), 1, 'a chart, drawn on the server')
    t.match(await page.locator('svg[role="img"] desc').textContent(), /Created: from 0 to 3 discussions/)
    t.same((await page.locator('tfoot td').allTextContents()).map((s) => s.trim()), ['3', '3', '0', '3'], 'the total: 3 created, 3 resolved, none reopened, 3 replies')
    await noViolations(t, page, `Reports, volume by day, ${width} px`)
    t.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), `nothing wider than the screen at ${width} px but the table's own scroll`)

    await page.getByLabel('Report', { exact: true }).selectOption({ label: 'Resolution time' })
    await page.getByLabel('By', { exact: true }).selectOption({ label: 'Supporter' })
    await page.getByRole('button', { name: 'Show' }).click()
    await page.waitForURL(/report=resolution/)
    t.same((await page.locator('tbody th').allTextContents()).map((s) => s.trim()), ['Nobody'], 'counted under their owner when resolved: nobody owned them')
    await noViolations(t, page, `Reports, resolution time by supporter, ${width} px`)
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download as CSV' }).click()])
    t.equal(download.suggestedFilename(), 'demo-resolution-by-supporter-2026-01-31-2026-03-01.csv')
    const csv = readFileSync((await download.path())!, 'utf8')
    t.match(csv, /^key,label,count,median_minutes,p90_minutes,median_business_minutes,p90_business_minutes\r\n,Nobody,3,/)
    await page.context().close()
  }
})
