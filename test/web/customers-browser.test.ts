import { simpleParser } from 'mailparser'
import type { Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Issue 49 in Chromium, on a phone's screen (360 px): Carol, a visitor, starts a discussion and
// posts it by the link mailed to her; the supporter answers in public and adds an internal note;
// Carol reads the answer (not the note) and answers; Dave, signed in by a mailed link, cannot open
// Carol's private discussion by its address (404) nor see it listed, and reads her public one
// without a way to answer it. axe-core on every customer page, each at 360 px.

const wide = (page: Page) => page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)

/** Asserts the page fits 360 px and axe-core finds nothing wrong on it. */
async function checked(t: Test, page: Page, what: string) {
  t.ok((await wide(page)) <= 360, `${what}: no sideways scrolling at 360 px`)
  await noViolations(t, page, what)
}

t.test('Carol starts and follows a discussion, Dave cannot reach it, the supporter answers; in Chromium at 360 px', async (t) => {
  const { app, base, smtp, ann } = await listeningDesk(t)
  await app.categories.add(ann.site.id, 'Billing', true)
  await app.categories.add(ann.site.id, 'Team only', false)
  // Fields asked of customers (issue 72): one of each kind of input the form has, a required one among them.
  const by = { id: null, name: 'the operator', via: 'cli' as const }
  await app.fields.add(ann.site.id, { key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'], audience: 'customers', required: true }, by)
  await app.fields.add(ann.site.id, { key: 'order_date', name: 'Order date', kind: 'date', audience: 'customers' }, by)
  await app.fields.add(ann.site.id, { key: 'products', name: 'Products', kind: 'choices', choices: ['Desk', 'Chat'], audience: 'customers' }, by)
  await app.fields.add(ann.site.id, { key: 'account', name: 'Account', kind: 'text', audience: 'team' }, by)
  const dave = await app.users.insert({ email: 'dave@customer.example', name: 'Dave' }, null)
  await app.users.addStaff(ann.site.id, dave.id)
  await app.users.removeStaff(ann.site.id, dave.id)
  let read = 0
  /** The link of the newest mail to `to`, after the outbox is sent. */
  async function linkTo(to: string) {
    await app.sendOutbox()
    const mail = smtp.mails.slice(read).find((m) => m.to.includes(to))!
    read = smtp.mails.length
    return /http:\/\/localhost:\d+\/demo\/help\/(?:link|sign_in)\/service_cln_\w+/.exec((await simpleParser(mail.raw)).text ?? '')![0]
  }

  const browser = await launchChromium(t)
  const phone = { viewport: { width: 360, height: 740 } }

  // Carol, a visitor: the site's address leads to the support site.
  const carol = await (await browser.newContext(phone)).newPage()
  await carol.goto(`${base}/demo/`)
  await carol.waitForURL(`${base}/demo/help`)
  await checked(t, carol, 'the support site for a visitor')
  await carol.getByRole('link', { name: 'Start a discussion' }).first().click()
  await carol.waitForURL(`${base}/demo/help/new`)
  await checked(t, carol, 'the new discussion form')
  // Sent empty but for a name: each field says what it needs (the browser's own checks set aside).
  await carol.locator('form[action$="/help/new"]').evaluate((form) => form.setAttribute('novalidate', ''))
  await carol.getByLabel('Your name', { exact: true }).fill('Carol')
  await carol.getByRole('button', { name: 'Send' }).click()
  t.match(await carol.getByRole('alert').textContent(), 'Please look at what is marked below.')
  await checked(t, carol, 'the new discussion form with its errors')
  await carol.getByLabel('Your email address').fill('carol@customer.example')
  await carol.getByLabel('About').selectOption({ label: 'Billing' })
  t.equal(await carol.getByLabel('About').locator('option', { hasText: 'Team only' }).count(), 0, 'a private category is not offered')
  await carol.getByLabel('Title', { exact: true }).fill('Invoice 1042 is wrong')
  await carol.getByLabel('Message').fill('It charges me twice.')
  t.equal(await carol.getByLabel('Account').count(), 0, "a field of the team's is not asked")
  await carol.getByLabel('Plan (required)').selectOption('Pro')
  await carol.getByLabel('Order date').fill('2026-11-30')
  await carol.getByLabel('Desk').check()
  await carol.getByRole('button', { name: 'Send' }).click()
  await carol.getByRole('heading', { name: 'Check your mail' }).waitFor()
  await checked(t, carol, 'the check-your-mail page')
  t.equal((await app.discussions.list({ siteId: ann.site.id, state: 'live', sort: 'activity', offset: 0, limit: 5 })).total, 0, 'nothing posted yet')

  await carol.goto(await linkTo('carol@customer.example'))
  await checked(t, carol, "the mailed link's page")
  await carol.getByRole('button', { name: 'Post my message' }).click()
  await carol.waitForURL(`${base}/demo/help/1`)
  t.match(await carol.locator('.comment').first().textContent(), 'It charges me twice.')
  t.equal(await carol.locator('[data-field="plan"]').textContent(), 'Pro', 'the values she gave, shown to her')
  t.equal(await carol.locator('[data-field="products"]').textContent(), 'Desk')
  await checked(t, carol, 'her discussion')

  // Carol, now signed in, starts a second discussion, public.
  await carol.getByRole('link', { name: 'Start a discussion' }).click()
  await carol.getByLabel('About').selectOption({ label: 'Billing' })
  await carol.getByLabel('Title', { exact: true }).fill('Can invoices show the VAT number?')
  await carol.getByLabel('Plan (required)').selectOption('Basic')
  await carol.getByLabel('Message').fill('Our accountant asks.')
  await carol.getByRole('checkbox', { name: /Public/ }).check()
  await carol.getByRole('button', { name: 'Send' }).click()
  await carol.waitForURL(`${base}/demo/help/2`)

  // The supporter, at a desk: the queue marks it as from the web; a public answer and a note.
  const desk = await (await browser.newContext({ viewport: { width: 1000, height: 900 } })).newPage()
  await signInOnPage(desk, base, ann)
  t.equal(await desk.locator('[data-discussion="1"] [data-from-web]').count(), 1, 'marked as from the web')
  await desk.getByRole('link', { name: 'Invoice 1042 is wrong' }).click()
  await desk.getByLabel('Message').fill('Refunded the second charge.')
  await desk.getByRole('button', { name: 'Send', exact: true }).click()
  await desk.waitForURL(/#comment-2$/)
  await desk.getByLabel('Message').fill('Card processor glitch, ticket 77.')
  await desk.getByLabel('An internal note: support staff only').check()
  await desk.getByRole('button', { name: 'Send', exact: true }).click()
  await desk.waitForURL(/#comment-3$/)

  // Carol reads the answer, not the note, and answers; the mail of the answer names her page.
  await carol.goto(`${base}/demo/help/1`)
  const conversation = await carol.locator('.conversation').textContent()
  t.match(conversation, 'Refunded the second charge.')
  t.notMatch(conversation, 'ticket 77', 'the internal note is not on her page')
  t.notMatch(await carol.locator('main').textContent(), 'ann@example.test', "no supporter's email")
  await app.sendOutbox()
  const answer = await simpleParser(smtp.mails.slice(read).find((m) => m.to.includes('carol@customer.example'))!.raw)
  read = smtp.mails.length
  t.equal(answer.subject, 'Re: [#1] Invoice 1042 is wrong')
  t.match(answer.text, `Refunded the second charge.\n\n-- \nRead and answer it on the web: ${base}/demo/help/1`, 'the public answer is mailed to her, with her page')
  await carol.getByLabel('Message').fill('Thank you, it shows now.')
  await carol.getByRole('button', { name: 'Send' }).click()
  await carol.waitForURL(/\/demo\/help\/1#comment-4$/)
  await carol.getByRole('button', { name: 'This is solved' }).click()
  await carol.waitForURL(`${base}/demo/help/1`)
  t.match(await carol.locator('[data-state]').textContent(), 'Solved')
  await carol.goto(`${base}/demo/help`)
  t.same(await carol.locator('[data-list="solved"] td[data-label="Title"]').allTextContents(), ['Invoice 1042 is wrong'])
  await checked(t, carol, 'her discussions')

  // Dave signs in by a mailed link.
  const daveTab = await (await browser.newContext(phone)).newPage()
  await daveTab.goto(`${base}/demo/help`)
  await daveTab.getByRole('link', { name: 'Sign in', exact: true }).click()
  await daveTab.waitForURL(`${base}/demo/help/sign_in`)
  await checked(t, daveTab, 'the sign-in page')
  await daveTab.getByLabel('Email address').fill('dave@customer.example')
  await daveTab.getByRole('button', { name: 'Mail me a link' }).click()
  await daveTab.getByRole('heading', { name: 'Check your mail' }).waitFor()
  const daveLink = await linkTo('dave@customer.example')
  await daveTab.goto(daveLink)
  await daveTab.getByRole('button', { name: 'Sign in' }).click()
  await daveTab.waitForURL(`${base}/demo/help`)
  t.equal(await daveTab.getByRole('heading', { name: 'My discussions' }).count(), 1, 'Dave is signed in')
  t.notMatch(await daveTab.locator('main').textContent(), 'Invoice 1042', "Carol's private discussion is not listed")
  t.match(await daveTab.locator('[data-list="public"]').textContent(), 'Can invoices show the VAT number?')

  const direct = await daveTab.goto(`${base}/demo/help/1`)
  t.equal(direct!.status(), 404, "Carol's private discussion by its address: 404")
  await checked(t, daveTab, 'the not-found page')
  await daveTab.goto(`${base}/demo/help/2`)
  t.match(await daveTab.locator('.conversation').textContent(), 'Our accountant asks.', 'the public one he reads')
  t.equal(await daveTab.getByLabel('Message').count(), 0, 'with no answer form')
  t.equal(await daveTab.getByRole('button', { name: 'This is solved' }).count(), 0)
  t.notMatch(await daveTab.locator('main').textContent(), /@/, 'display names only')
  await checked(t, daveTab, "someone else's public discussion")

  // The pages that say why not: a link used already (410), and a visitor where visitors may not write (403).
  await daveTab.goto(daveLink)
  await daveTab.getByRole('button', { name: 'Sign in' }).click()
  await daveTab.getByRole('heading', { name: 'This link no longer works' }).waitFor()
  await checked(t, daveTab, 'a link used already')
  await app.sites.setPolicy(ann.site.id, { visitorDiscussions: false })
  const visitor = await (await browser.newContext(phone)).newPage()
  t.equal((await visitor.goto(`${base}/demo/help/new`))!.status(), 403)
  await checked(t, visitor, 'the page that asks a visitor to sign in first')
})
