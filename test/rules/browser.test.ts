import t from 'tap'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'

// Engines: one: Chromium cannot tell the engines apart; the rules run on both in test/rules/rules.test.ts and test/rules/pages.test.ts.
// Issue 70's walk, in Chromium, on a wide screen and a phone's: Ann, an administrator, adds a rule
// on Administration -> Rules after a dry run, then applies a macro on a discussion the rule
// tagged; axe-core over both pages, and nothing wider than the screen.

t.test('Ann tries a rule, adds it, and applies a macro on the discussion it tagged, at 1280 and 360 px', async (t) => {
  const { app, base, ann } = await listeningDesk(t)
  const siteId = ann.site.id
  await app.users.setAdministrator(siteId, ann.user.id, true)
  const general = await app.categories.add(siteId, 'General', true)
  await app.savedReplies.add(siteId, { title: 'Done', body: 'Fixed for you, {{customer.first_name}}.', actions: [{ type: 'add_tags', tags: ['answered'] }, { type: 'set_state', state: 'resolved' }] })
  const write = async (title: string) => (await app.discussions.create({ siteId, categoryId: general.id, title, body: 'Help.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })).discussion
  await write('An invoice from last year')
  const browser = await launchChromium(t)

  for (const width of [1280, 360]) {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage()
    const wide = async (what: string) => t.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), `nothing wider than the screen at ${width} px but a table's own scroll: ${what}`)
    await signInOnPage(page, base, ann)
    await page.goto(`${base}/demo/admin/rules`)
    await noViolations(t, page, `Administration -> Rules, ${width} px`)
    await wide('the rules')

    const name = `Invoices at ${width}`
    await page.getByLabel('Name', { exact: true }).fill(name)
    await page.getByLabel('A discussion is created').check()
    await page.getByLabel(/^Words in its title/).fill('invoice')
    await page.getByLabel('Add tags').fill(`invoice-${width}`)
    await page.getByRole('button', { name: 'Dry run' }).click()
    await page.waitForURL(/\/admin\/rules\/dry_run$/)
    // The first pass's discussion is about an invoice too, on the second.
    t.match(await page.locator('[data-dry-run] [role="status"]').textContent(), `it would act on ${width === 1280 ? 1 : 2}.`)
    t.equal(await page.locator('[data-match="1"]').textContent(), `#1 An invoice from last year: tag invoice-${width}`)
    await noViolations(t, page, `the dry run, ${width} px`)
    await wide('the dry run')
    t.equal(await page.getByLabel('Name', { exact: true }).inputValue(), name, 'the form kept')
    await page.getByRole('button', { name: 'Add', exact: true }).click()
    await page.waitForURL(/done=added/)
    t.match(await page.locator(`[data-rule="${name}"] [data-does]`).textContent(), `tag invoice-${width}`)
    await noViolations(t, page, `Administration -> Rules with rules, ${width} px`)
    await wide('the rules, with some')

    // The next discussion about an invoice: tagged by the rule; a macro answers and resolves it.
    const d = await write(`Invoice ${width} is wrong`)
    await page.goto(`${base}/demo/discussions/${d.number}`)
    t.match(await page.locator('[data-firings]').textContent(), new RegExp(`${name}: tag invoice-${width}`))
    await noViolations(t, page, `a discussion with the macro form and the rules applied, ${width} px`)
    await wide('the discussion')
    await page.getByLabel(/^Macro/).selectOption({ label: 'Done' })
    await page.getByRole('button', { name: 'Apply macro' }).click()
    await page.waitForURL(/done=macro/)
    t.equal(await page.locator('[data-state]').textContent(), 'resolved')
    t.match(await page.locator('[data-tags]').textContent(), /answered/)
    t.match(await page.locator('[data-comment]').last().textContent(), /Fixed for you, carol\./)
    await noViolations(t, page, `a discussion after its macro, ${width} px`)
    await wide('the discussion after its macro')
  }
})
