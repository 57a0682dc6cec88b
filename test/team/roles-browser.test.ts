import t from 'tap'
import type { Page } from 'playwright-core'
import { supporterWithToken, V1 } from '../fixtures/app.ts'
import { launchChromium, listeningDesk, noViolations, signInOnPage } from '../fixtures/browser.ts'
import { apiDoors } from '../fixtures/doors.ts'
import { readMail } from '../fixtures/mail.ts'

// Engines: one: Chromium cannot tell the engines apart; the roles' rules run on both in test/team/collaborators.test.ts.
// Issue 67's walk, in Chromium, each person in a browser of their own: Ann (an administrator)
// invites Bob as a supporter and Cleo as a collaborator on Administration -> Team; both join from
// the mail (a real SMTP server); Cleo reads a discussion and adds a note, and is refused a public
// reply through the page and through each door of the API; Bob is made an administrator, then
// removed, and his open page and his token stop working at once; Administration -> Record lists
// each step. axe-core over the new pages.

t.test('Ann runs the team from the browser: a supporter and a collaborator join, roles change, the record tells it', async (t) => {
  const { app, base, smtp, ann } = await listeningDesk(t)
  const site = ann.site
  await app.users.setAdministrator(site.id, ann.user.id, true)
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  const general = await app.categories.add(site.id, 'General', true)
  await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: { ...api.bearer, accept: V1 }, payload: { title: 'Export fails', body: 'The CSV export stops at 1000 rows.', author_email: 'carol@customer.example' } })

  const browser = await launchChromium(t)
  const pageOf = async (width = 1100) => (await browser.newContext({ viewport: { width, height: 900 } })).newPage()
  const annPage = await pageOf()
  await signInOnPage(annPage, base, ann)

  // Ann invites Bob as a supporter and Cleo as a collaborator.
  const invite = async (email: string, role: string) => {
    await annPage.goto(`${base}/demo/admin/team`)
    await annPage.getByLabel('Email').fill(email)
    await annPage.locator(`input[name="role"][value="${role.toLowerCase()}"]`).check()
    await annPage.getByRole('button', { name: 'Send the invitation' }).click()
    await annPage.waitForURL(/invited=/)
  }
  await invite('bob@example.test', 'Supporter')
  await invite('cleo@engineering.example', 'Collaborator')
  t.same(await annPage.locator('[data-invitation] td:first-of-type').allTextContents(), ['Collaborator', 'Supporter'], 'both open, with their roles')
  await noViolations(t, annPage, 'the team page with a collaborator invited')

  // Each joins from the mail, in a browser of their own.
  await app.sendOutbox()
  const join = async (email: string, name: string, password: string, width?: number) => {
    const mail = smtp.mails.find((m) => m.to.includes(email))!
    const link = /(http:\/\/localhost:\d+\/demo\/invitation\/\S+)/.exec(readMail(mail).text)![1]!
    const page = await pageOf(width)
    await page.goto(link)
    await page.getByLabel('Your name').fill(name)
    await page.getByLabel('Choose a password').fill(password)
    await page.getByLabel('The password again').fill(password)
    await page.getByRole('button', { name: 'Join' }).click()
    await page.waitForURL(`${base}/demo/discussions`)
    return page
  }
  const bobPage = await join('bob@example.test', 'Bob', 'bobs own password')
  t.match(readMail(smtp.mails.find((m) => m.to.includes('cleo@engineering.example'))!).text, /as a collaborator \(who reads the discussions and writes internal notes\)/)
  const cleoPage = await join('cleo@engineering.example', 'Cleo', 'cleos own password', 390)

  // Cleo reads the discussion; the page offers her a note and nothing else.
  await cleoPage.getByRole('link', { name: 'Export fails' }).click()
  await cleoPage.waitForURL(/\/discussions\/1$/)
  t.equal(await cleoPage.getByRole('heading', { name: 'Internal note' }).count(), 1)
  t.equal(await cleoPage.getByLabel('A reply to the customer').count(), 0, 'no way to write to the customer')
  t.equal(await cleoPage.getByRole('button', { name: /Resolve|Give|Take it|Save tags/ }).count(), 0, 'no action of a supporter')
  await noViolations(t, cleoPage, "a collaborator's discussion page at a phone's width")
  await cleoPage.getByLabel('Message').fill('The export pages by 1000: fixed in 4.2, out Friday.')
  await cleoPage.getByRole('button', { name: 'Send', exact: true }).click()
  await cleoPage.waitForURL(/done=noted/)
  const comments = async () => (await app.inject({ url: '/demo/discussions/1', headers: { ...api.bearer, accept: V1 } })).json().comments as Array<{ body: string; internal: boolean }>
  t.same((await comments()).at(-1), { ...(await comments()).at(-1), internal: true, body: 'The export pages by 1000: fixed in 4.2, out Friday.' })

  // From Cleo's side: a public reply forced through the page's form, and through each door of the API.
  // What a hand-made form would send: the page's own form, its choice turned to a public reply.
  const forced = await cleoPage.evaluate(`(async () => {
    const form = document.querySelector('form[data-reply]')
    const data = new FormData(form)
    data.set('internal', 'no')
    data.set('body', 'Hello Carol!')
    return (await fetch(form.action, { method: 'POST', body: data, headers: { accept: 'text/html' } })).status
  })()`)
  t.equal(forced, 403, 'the page refuses a public reply')
  const cleo = (await app.users.find('cleo@engineering.example'))!
  const doors = await apiDoors(app, site, { email: cleo.email, password: 'cleos own password', user: cleo })
  for (const [door, headers] of Object.entries(doors)) {
    const reply = await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...headers, accept: V1 }, payload: { body: 'Hello Carol!' } })
    t.equal(reply.statusCode, 403, `${door}: no public reply`)
  }
  t.notOk((await comments()).some((c) => c.body === 'Hello Carol!'), 'nothing reached the customer')

  // Ann makes Bob an administrator, then removes him: his open page and his token stop at once.
  const bobToken = await supporterWithToken(app, { email: 'bob@example.test' })
  const bob = (await app.users.find('bob@example.test'))!
  const changeBob = async (label: 'Change role' | 'Remove from the staff', role?: string) => {
    await annPage.goto(`${base}/demo/admin/team`)
    if (role) await annPage.getByLabel('Role of bob@example.test', { exact: true }).selectOption(role)
    await annPage.getByRole('button', { name: `${label}${label === 'Change role' ? ' of' : ''} bob@example.test` }).click()
    await annPage.waitForURL(/\/admin\/team\?/)
  }
  await changeBob('Change role', 'administrator')
  t.match(await annPage.getByRole('status').textContent(), 'bob@example.test is an administrator of this site now.')
  // His rights rose: his session ended, and the one he signs in to next is an administrator's.
  await bobPage.goto(`${base}/demo/admin/team`)
  t.match(bobPage.url(), /\/demo\/login/, 'signed out when made an administrator')
  await signInOnPage(bobPage, base, { email: 'bob@example.test', password: 'bobs own password' })
  t.equal((await bobPage.goto(`${base}/demo/admin/team`))!.status(), 200, 'Bob administers now')
  await changeBob('Remove from the staff')
  t.equal((await bobPage.reload())!.status(), 403, "Bob's open page is refused")
  t.equal((await bobPage.goto(`${base}/demo/discussions`))!.status(), 403, 'and the queue')
  t.equal((await app.inject({ url: '/demo/discussions', headers: { ...bobToken.bearer, accept: V1 } })).statusCode, 403, 'so is his token')
  t.equal(await app.users.staffRole(site.id, bob.id), undefined)

  // The record lists each step, newest first.
  await annPage.goto(`${base}/demo/admin/record?action=team`)
  const steps = async (page: Page) => page.locator('[data-record]').evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-record'), r.querySelector('th')!.textContent]))
  t.same((await steps(annPage)).reverse(), [
    ['team.invited', 'bob@example.test'],
    ['team.invited', 'cleo@engineering.example'],
    ['team.joined', 'bob@example.test'],
    ['team.joined', 'cleo@engineering.example'],
    ['team.role_changed', 'bob@example.test'],
    ['team.removed', 'bob@example.test'],
  ])
  await noViolations(t, annPage, 'Administration -> Record')
  await annPage.goto(`${base}/demo/admin/categories`)
  await noViolations(t, annPage, 'Administration -> Categories')
  // Administration -> Fields (issue 72): a field with choices added through the page's form.
  await annPage.goto(`${base}/demo/admin/fields`)
  await annPage.getByLabel('Name', { exact: true }).last().fill('Plan')
  await annPage.getByLabel(/^Key/).fill('plan')
  await annPage.getByLabel('Kind').selectOption({ label: 'One choice' })
  await annPage.getByLabel('Shown to', { exact: true }).last().selectOption('customers')
  await annPage.getByLabel(/^Choices, one a line/).last().fill('Basic\nPro')
  await annPage.getByRole('button', { name: 'Add' }).click()
  await annPage.getByRole('status').filter({ hasText: 'The field is added.' }).waitFor()
  t.match(await annPage.locator('[data-field-row="plan"]').textContent(), /plan · One choice/)
  await noViolations(t, annPage, 'Administration -> Fields')
  await annPage.goto(`${base}/demo/admin/hours`)
  await annPage.getByLabel('Name').fill('Berlin')
  await annPage.getByLabel(/^Time zone/).fill('Europe/Berlin')
  await annPage.getByRole('button', { name: 'Add' }).click()
  await annPage.waitForURL(/done=added/)
  await noViolations(t, annPage, 'Administration -> Business hours')
})
