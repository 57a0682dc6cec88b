import { simpleParser } from 'mailparser'
import t from 'tap'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'

// Engines: one: Chromium cannot tell the engines apart; the pages' stores run on both in test/privacy.
// Issue 74 in Chromium, axe-core on each new page: Carol, a customer, asks for a copy of her data on
// the support site and opens the link mailed to her (its download page); Ann, an administrator,
// finds Carol on Administration -> Customers' data, reads what erasing her would do, ticks that it
// cannot be undone and erases her; her discussion stays for the team without her.

t.test("a customer's copy of her data and her erasure, in Chromium", async (t) => {
  const { app, base, smtp, ann } = await listeningDesk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Lost parcel', body: 'Carol Quintessa here: my parcel is lost.', via: 'api', supporterId: ann.user.id, onBehalfOf: { email: 'carol.q@customer.example', name: 'Carol Quintessa' } })
  let read = 0
  /** The link of the newest mail, after the outbox is sent. */
  async function mailedLink() {
    await app.sendOutbox()
    const mail = smtp.mails.slice(read).at(-1)!
    read = smtp.mails.length
    return /http:\/\/localhost:\d+\/demo\/help\/(?:sign_in|export)\/service_cln_\w+/.exec((await simpleParser(mail.raw)).text ?? '')![0]
  }
  const browser = await launchChromium(t)

  // Carol signs in by a mailed link, and asks for her data.
  const carol = await (await browser.newContext()).newPage()
  await carol.goto(`${base}/demo/help/sign_in`)
  await carol.getByLabel('Email address', { exact: true }).fill('carol.q@customer.example')
  await carol.getByRole('button', { name: 'Mail me a link' }).click()
  await carol.goto(await mailedLink())
  await carol.getByRole('button').first().click()
  await carol.waitForURL(`${base}/demo/help`)
  await noViolations(t, carol, 'the support site with "Your data"')
  await carol.getByRole('button', { name: 'Download a copy of your data' }).click()
  await noViolations(t, carol, 'the page saying the link is mailed')
  await carol.goto(await mailedLink())
  t.match(await carol.locator('main').textContent(), /Download a copy of your data/)
  await noViolations(t, carol, 'the download page of the mailed link')
  const [download] = await Promise.all([carol.waitForEvent('download'), carol.getByRole('button', { name: /Download/ }).click()])
  t.equal(download.suggestedFilename(), 'demo-my-data.zip')

  // Ann erases her.
  const page = await (await browser.newContext()).newPage()
  await signInOnPage(page, base, ann)
  await page.goto(`${base}/demo/admin/privacy`)
  await noViolations(t, page, "Administration -> Customers' data")
  await page.getByLabel('Their email address').fill('carol.q@customer.example')
  await page.getByRole('button', { name: 'Find them' }).click()
  t.match(await page.locator('[data-erasure-plan]').textContent(), /keep, without them, the 1 discussion they started/)
  await noViolations(t, page, 'what erasing Carol would do')
  await page.getByLabel('I understand an erasure cannot be undone').check()
  await page.getByRole('button', { name: 'Erase Carol Quintessa' }).click()
  await page.waitForURL(`${base}/demo/admin/privacy?done=erased`)
  t.match(await page.getByRole('status').textContent(), /The customer is erased/)
  await noViolations(t, page, 'the page after an erasure')
  await page.goto(`${base}/demo/discussions/1`)
  t.match(await page.locator('main').textContent(), /Removed at the customer's request/)
  t.notMatch(await page.content(), /Quintessa/)
})
