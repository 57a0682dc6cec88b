import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { launchChromium, noViolations } from '../fixtures/browser.ts'
import { freePort } from '../fixtures/server.ts'
import { totpCode } from '../fixtures/totp.ts'
import { personWithPassword } from '../fixtures/web.ts'
import { mailOf } from '../../db/stores/outbox.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Issue 35 in Chromium: an authenticator app enrolled with codes computed by the test's own RFC
// 6238, a sign-in with a code, a recovery code used twice, a token that asks to confirm after the
// window, a wrong code counted; axe-core over each new page. The app runs in this process on a
// real socket, so its clock is the test's.

t.test('a supporter enrolls an authenticator app, signs in with it, and uses recovery codes, in Chromium', async (t) => {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const { app, clock } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}` } })
  await app.listen({ port, host: '127.0.0.1' })
  const ann = await personWithPassword(app)
  const browser = await launchChromium(t)

  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } })
  const page = await context.newPage()
  const signIn = async () => {
    await page.goto(`${base}/demo/login`)
    await page.getByLabel('Email').fill(ann.email)
    await page.getByLabel('Password').fill(ann.password)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  }
  await signIn()
  await page.waitForURL(`${base}/demo/discussions`)

  await page.goto(`${base}/demo/profile`)
  await noViolations(t, page, 'the profile with its two-step section')
  await page.getByLabel('Name of the app or device').fill('Work phone')
  await page.getByRole('button', { name: 'Add an authenticator app' }).click()
  t.ok(await page.locator('.qr svg').isVisible(), 'the QR code is drawn')
  await noViolations(t, page, 'the enrollment page')
  await page.getByText('Cannot scan it? Type the key instead').click()
  const secret = (await page.locator('[data-secret]').textContent())!
  await page.getByLabel('Code from the app').fill(totpCode(secret, clock()))
  await page.getByRole('button', { name: 'Confirm' }).click()
  const codes = await page.locator('[data-recovery-codes] code').allTextContents()
  t.equal(codes.length, 10, 'ten recovery codes, shown once')
  await noViolations(t, page, 'the recovery codes page')
  await page.getByRole('link', { name: 'I have kept them' }).click()
  t.match(await page.locator('[data-factor]').textContent(), 'Work phone')

  // Signed out, the password is the first of two steps.
  await page.getByRole('button', { name: 'Sign out' }).click()
  clock.advance(30_000)
  await signIn()
  await page.waitForURL(`${base}/demo/login`)
  t.match(await page.locator('h1').textContent(), 'Sign in: second step')
  await noViolations(t, page, 'the second step')
  await page.getByLabel('Code from the app').fill(totpCode(secret, clock()) === '123456' ? '654321' : '123456')
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  t.match(await page.getByRole('alert').textContent(), 'That code is not right')
  await noViolations(t, page, 'the second step with its error')
  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['second_factor_failed'], offset: 0, limit: 5 })
  t.equal(events.length, 1, 'the wrong code is counted and logged')
  await page.getByLabel('Code from the app').fill(totpCode(secret, clock()))
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(`${base}/demo/discussions`)
  t.pass('signed in with a code')
  await page.goto(`${base}/demo/profile/api_tokens`)

  // After the sudo window, creating a token asks to confirm with a code, then comes back.
  clock.advance(16 * 60_000)
  await page.getByLabel('Name', { exact: true }).fill('Export')
  await page.getByRole('button', { name: 'Create token' }).click()
  await page.waitForURL(/\/demo\/confirm\?for=token/)
  t.match(await page.locator('main').textContent(), 'To create a personal API token, enter a code of your authenticator app')
  await noViolations(t, page, 'the confirmation page')
  await page.getByLabel('Code from the app').fill(totpCode(secret, clock()))
  await page.getByRole('button', { name: 'Confirm' }).click()
  await page.waitForURL(`${base}/demo/profile/api_tokens`)
  await page.getByLabel('Name', { exact: true }).fill('Export')
  await page.getByRole('button', { name: 'Create token' }).click()
  t.match(await page.locator('#new-token').inputValue(), /^service_pat_/, 'the token, once confirmed')

  // A recovery code signs in once; the second time it is refused.
  for (const [round, expected] of [[1, 'signed in'], [2, 'refused']] as const) {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await signIn()
    await page.waitForURL(`${base}/demo/login`)
    await page.getByText('Lost your phone? Use a recovery code').click()
    await page.getByLabel('Recovery code').fill(codes[0])
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    if (expected === 'signed in') {
      await page.waitForURL(`${base}/demo/profile?recovery_left=9`)
      t.match(await page.getByRole('status').first().textContent(), 'You signed in with a recovery code: 9 of 10 are left.')
      t.pass(`round ${round}: the recovery code signs in`)
    } else {
      t.match(await page.getByRole('alert').textContent(), 'That code is not right, or was used already', `round ${round}: used up`)
    }
  }

  // Issue 67: a forgotten password, from the sign-in page, with the second factor after the link.
  await page.goto(`${base}/demo/login`)
  await page.getByRole('link', { name: 'Forgot your password?' }).click()
  await noViolations(t, page, 'the forgotten password page')
  await page.getByLabel('Email').fill(ann.email)
  await page.getByRole('button', { name: 'Mail me a link' }).click()
  t.match(await page.getByRole('status').textContent(), `If ${ann.email} is the address of someone of`)
  await noViolations(t, page, 'the forgotten password page, sent')
  // No SMTP server here: the mail waits in the outbox, sealed; the test opens it as the sender would.
  const [row] = (await app.outbox.dueMail(10)).filter((queued) => queued.kind === 'password_reset')
  const link = /(http:\/\/localhost:\d+\/demo\/login\/reset\/\S+)/.exec(mailOf(row!, app.secretBox)!.text)![1]!
  await page.goto(link)
  await noViolations(t, page, 'the page of the mailed link')
  await page.getByRole('button', { name: 'Go on' }).click()
  await page.waitForURL(/\/demo\/login\/second_step/)
  // A code of a new window: each code signs in once.
  clock.advance(30_000)
  await page.getByLabel('Code from the app').fill(totpCode(secret, clock()))
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(`${base}/demo/profile?forgotten=1`)
  await page.getByLabel('New password', { exact: true }).fill('the password I will remember')
  await page.getByLabel('The new password again').fill('the password I will remember')
  await page.getByRole('button', { name: 'Change your password' }).click()
  await page.waitForURL(`${base}/demo/profile?password=1`)
  t.pass('a new password, set after the link and the second factor')
})
