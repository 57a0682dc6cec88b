import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { launchChromium, noViolations } from '../fixtures/browser.ts'
import { DESK, identityProvider } from '../fixtures/identity-provider.ts'
import { freePort } from '../fixtures/server.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in test/web/company-sign-in.test.ts.
// Issue 73 in Chromium: Ann signs in with the company's account at the provider of the tests and
// lands on the queue; on Administration -> Sign-in she signs the staff in with it only; her
// password is then refused; sudo mode sends her back to the provider's sign-in. axe-core over each
// page, the sign-in page at 360 px too. The app runs in this process, so its clock is the test's.

t.test("Ann signs in with the company's account, switches passwords off, and confirms at the provider, in Chromium", async (t) => {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const { app, clock } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}` } })
  await app.listen({ port, host: '127.0.0.1' })
  const ann = await personWithPassword(app, { email: 'ann@acme.example' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const idpPort = await freePort()
  await app.signInProviders.add(ann.site.id, { name: 'Acme', kind: 'oidc', issuer: `http://127.0.0.1:${idpPort}`, clientId: DESK.id, clientSecret: DESK.secret })
  const idp = await identityProvider(t, { redirectUri: `${base}/demo/login/provider/callback`, port: idpPort })
  const browser = await launchChromium(t)
  const page = await (await browser.newContext({ viewport: { width: 1000, height: 900 } })).newPage()

  const atProvider = async () => {
    await page.waitForURL(`${idp.issuer}/interaction/**`)
    await page.getByLabel('Work account').fill('ann@acme.example')
    await page.getByRole('button', { name: 'Sign in' }).click()
  }
  await page.goto(`${base}/demo/login`)
  await noViolations(t, page, 'the sign-in page with its provider')
  await page.getByRole('button', { name: 'Sign in with Acme' }).click()
  await atProvider()
  await page.waitForURL(`${base}/demo/discussions`)
  t.pass('Ann is on the queue')

  await page.goto(`${base}/demo/admin/sign_in`)
  t.match(await page.locator('[data-redirect-address]').textContent(), `${base}/demo/login/provider/callback`)
  await noViolations(t, page, 'Administration -> Sign-in')
  await page.getByRole('button', { name: "Sign the staff in with the company's account only" }).click()
  t.match(await page.getByRole('status').textContent(), "The staff sign in with the company's account only")
  await noViolations(t, page, 'Administration -> Sign-in, switched on')

  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.goto(`${base}/demo/login`)
  await page.getByLabel('Email').fill(ann.email)
  await page.getByLabel('Password').fill(ann.password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  t.match(await page.getByRole('alert').first().textContent(), "The support staff of this site sign in with the company's account")
  await noViolations(t, page, 'the refused password')
  await page.setViewportSize({ width: 360, height: 800 })
  await noViolations(t, page, 'the sign-in page at 360 px')
  await page.setViewportSize({ width: 1000, height: 900 })

  // Signed in with the provider again (its session there: no form), then sudo mode asks for it anew.
  await page.getByRole('button', { name: 'Sign in with Acme' }).click()
  await page.waitForURL(`${base}/demo/discussions`)
  clock.advance(16 * 60_000)
  await page.goto(`${base}/demo/profile/api_tokens`)
  await page.getByLabel('Name', { exact: true }).fill('Export')
  await page.getByRole('button', { name: 'Create token' }).click()
  await page.waitForURL(/\/demo\/confirm\?for=token/)
  await noViolations(t, page, 'the confirmation at the provider')
  const logins = idp.logins
  await page.getByRole('button', { name: 'Confirm at Acme' }).click()
  await atProvider()
  await page.waitForURL(`${base}/demo/profile/api_tokens`)
  t.equal(idp.logins, logins + 1, 'the provider asked her to sign in again')
  await page.getByLabel('Name', { exact: true }).fill('Export')
  await page.getByRole('button', { name: 'Create token' }).click()
  await page.locator('[data-token]').waitFor()
  t.pass('the token is made once she confirmed')
})
