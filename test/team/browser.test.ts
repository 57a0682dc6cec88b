import t from 'tap'
import { supporterWithToken, V1 } from '../fixtures/app.ts'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'
import { readMail } from '../fixtures/mail.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Issue 51 in Chromium, two supporters in two browsers: Ann gives a discussion to Bob, Bob's Mine
// tab shows it without a reload, Bob answers with a saved reply, Ann's open page says Bob answered,
// Ann's own reply then takes a second click; tags filter the queue; a customer's reply is mailed
// to Bob through a real SMTP server; axe-core over every page the issue changed.

t.test('Ann and Bob work the queue together, live', async (t) => {
  const { app, base, smtp, ann } = await listeningDesk(t)
  const bob = await personWithPassword(app, { email: 'bob@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const fromCarol = (title: string) =>
    app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: { ...api.bearer, accept: V1 }, payload: { title, body: `About ${title}.`, author_email: 'carol@customer.example', author_name: 'Carol Customer' } })
  await fromCarol('Printer on fire')
  await fromCarol('Login trouble')

  const browser = await launchChromium(t)
  const annPage = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage()
  const bobPage = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage()
  await signInOnPage(annPage, base, ann)
  await signInOnPage(bobPage, base, bob)

  // Ann writes a saved reply for the team (Administration → Queue).
  await annPage.goto(`${base}/demo/admin/queue`)
  await noViolations(t, annPage, 'Administration → Queue')
  await annPage.getByLabel('Title').fill('Printer: first steps')
  await annPage.getByLabel('Text').fill('Hello {{customer.first_name}}, {{supporter.name}} here. Switch it off, then on again.')
  await annPage.getByRole('button', { name: 'Add' }).click()
  await annPage.waitForURL(/done=added$/)

  // Bob watches his own queue; it is empty.
  await bobPage.goto(`${base}/demo/discussions?owner=mine`)
  t.equal(await bobPage.locator('[data-queue] tbody tr').count(), 0)
  t.match(await bobPage.locator('[data-owner="mine"]').textContent(), 'Mine (0)')
  await noViolations(t, bobPage, "the queue's owners' tabs")

  // Ann gives the printer to Bob and tags it.
  await annPage.goto(`${base}/demo/discussions`)
  await annPage.getByRole('link', { name: 'Printer on fire' }).click()
  await annPage.getByLabel('Owner', { exact: true }).selectOption({ label: bob.user.name })
  await annPage.getByRole('button', { name: 'Give' }).click()
  await annPage.waitForURL(/done=assigned$/)
  t.equal(await annPage.locator('[data-owner]').textContent(), bob.user.name)
  await annPage.getByLabel(/^Tags/).fill('printer, Urgent')
  await annPage.getByRole('button', { name: 'Save tags' }).click()
  await annPage.waitForURL(/done=tagged$/)
  await noViolations(t, annPage, 'a discussion with its owner and tags')

  // Bob's Mine tab shows it without a reload (Server-Sent Events), its count too. The tags came in
  // a second change: the page may show the first before it reads itself again for the second.
  await bobPage.locator('[data-queue] [data-discussion="1"]').waitFor({ timeout: 5000 })
  t.match(await bobPage.locator('[data-owner="mine"]').textContent(), 'Mine (1)', 'the live count')
  await bobPage.locator('[data-discussion="1"] [data-tag]').nth(1).waitFor({ timeout: 5000 })
  t.same(await bobPage.locator('[data-discussion="1"] [data-tag]').allTextContents(), ['printer', 'urgent'])

  // Tags filter the queue: a chip is a link to its filter.
  await bobPage.goto(`${base}/demo/discussions`)
  t.equal(await bobPage.locator('[data-queue] tbody tr').count(), 2)
  await bobPage.locator('[data-discussion="1"] [data-tag]', { hasText: 'urgent' }).click()
  await bobPage.waitForURL(/tag=urgent$/)
  t.same(await bobPage.locator('[data-queue] tbody td[data-label="Title"] > a:not(.chip)').allTextContents(), ['Printer on fire'], 'only the tagged one')

  // Bob answers with the saved reply, filled in for Carol and himself.
  await bobPage.getByRole('link', { name: 'Printer on fire' }).click()
  await bobPage.getByLabel('Saved reply').selectOption({ label: 'Printer: first steps' })
  await bobPage.getByRole('button', { name: 'Insert' }).click()
  t.equal(await bobPage.getByLabel('Message').inputValue(), `Hello Carol, ${bob.user.name} here. Switch it off, then on again.`)
  // An internal note looks different while it is written; a reply to the customer does not.
  const background = () => bobPage.getByLabel('Message').evaluate((e) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(e).backgroundColor)
  const plain = await background()
  await bobPage.getByLabel('An internal note: support staff only').check()
  t.not(await background(), plain, 'the note is coloured')
  t.ok(await bobPage.getByText('Internal note: the customer will not see this.').isVisible())
  await noViolations(t, bobPage, 'the reply form as an internal note')
  await bobPage.getByLabel('A reply to the customer').check()
  t.equal(await background(), plain)
  await bobPage.getByRole('button', { name: 'Send', exact: true }).click()
  await bobPage.waitForURL(/done=sent#comment-2$/)
  t.match(await bobPage.locator('[data-done]').textContent(), 'Your reply was sent.')

  // Ann's open page says so at once, and her reply waits for a second click.
  const notice = annPage.locator('[data-replied-notice]')
  await notice.waitFor({ state: 'visible', timeout: 5000 })
  t.match(await notice.textContent(), `${bob.user.name} wrote since you opened this page`)
  t.equal(await annPage.locator('[data-comment]').count(), 2, "Bob's reply is on her page")
  await annPage.getByLabel('Message').fill('And check the paper tray.')
  await annPage.getByRole('button', { name: 'Send', exact: true }).click()
  t.match(await annPage.getByRole('alert').textContent(), `${bob.user.name} wrote since you opened this page: read it above. Your reply was not sent yet`)
  t.equal(await annPage.getByLabel('Message').inputValue(), 'And check the paper tray.', 'her reply is kept')
  t.equal((await app.discussions.get(ann.site.id, 1)).commentsCount, 2, 'not sent yet')
  await noViolations(t, annPage, 'the page asking for the second click')
  await annPage.getByRole('button', { name: 'Send', exact: true }).click()
  await annPage.waitForURL(/done=sent#comment-3$/)
  t.equal((await app.discussions.get(ann.site.id, 1)).commentsCount, 3, 'the second click sent it')

  // Carol answers (through the API, on her behalf): Bob, its owner, is mailed.
  await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...api.bearer, accept: V1 }, payload: { body: 'Still smoking.', author_email: 'carol@customer.example' } })
  await app.sendOutbox()
  const toBob = smtp.mails.filter((m) => m.to.includes('bob@example.test')).map(readMail)
  t.match(toBob.at(-1), { subject: '[Site demo] Reply on #1: Printer on fire', text: /Carol Customer replied on a discussion you own:[\s\S]*Still smoking\.[\s\S]*Open it: http:\/\/localhost:\d+\/demo\/discussions\/1/ })
  t.notOk(smtp.mails.some((m) => m.to.includes('ann@example.test') && readMail(m).subject.includes('Reply on #1')), 'Ann does not own it: not mailed')

  // Delete asks first.
  await annPage.goto(`${base}/demo/discussions/2`)
  await annPage.getByRole('button', { name: 'Delete…' }).click()
  await annPage.waitForURL(/\/discussions\/2\/act$/)
  await noViolations(t, annPage, 'the question before a delete')
  await annPage.getByRole('link', { name: 'Keep it' }).click()
  t.equal((await app.discussions.get(ann.site.id, 2)).state, 'new', 'kept')

  // The profile's choices.
  await bobPage.goto(`${base}/demo/profile`)
  await noViolations(t, bobPage, 'the profile with its mail choices')

  // Issue 67: Ann invites Dee on Administration -> Team; Dee joins from the mail in a browser of her own.
  await annPage.goto(`${base}/demo/admin/team`)
  await noViolations(t, annPage, 'the team page')
  await annPage.getByLabel('Email').fill('dee@example.test')
  await annPage.getByRole('button', { name: 'Send the invitation' }).click()
  await annPage.waitForURL(/invited=/)
  t.match(await annPage.getByRole('status').textContent(), 'dee@example.test is invited')
  await noViolations(t, annPage, 'the team page with an open invitation')
  await app.sendOutbox()
  const invitation = smtp.mails.find((mail) => mail.to.includes('dee@example.test'))!
  const link = /(http:\/\/localhost:\d+\/demo\/invitation\/\S+)/.exec(readMail(invitation).text)![1]!
  const deePage = await (await browser.newContext({ viewport: { width: 360, height: 800 } })).newPage()
  await deePage.goto(link)
  await noViolations(t, deePage, 'the invitation at a phone\'s width')
  await deePage.getByLabel('Your name').fill('Dee')
  await deePage.getByLabel('Choose a password').fill('dees own password')
  await deePage.getByLabel('The password again').fill('dees own password')
  await deePage.getByRole('button', { name: 'Join' }).click()
  await deePage.waitForURL(`${base}/demo/discussions`)
  t.pass('Dee joined and works on the queue')
})
