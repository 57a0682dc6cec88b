import type { BrowserContext, Page } from 'playwright-core'
import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { launchChromium, noViolations } from '../fixtures/browser.ts'
import { freePort } from '../fixtures/server.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Passkeys (docs/decisions.md, "Passkeys") in Chromium, with Chrome's virtual authenticator (the
// DevTools protocol's WebAuthn domain): one registered on the profile, a sign-in with the passkey
// alone, the second step after a password, a confirmation before a token; axe-core over each new
// page. Two people, two browsers: Bob replays Ann's answer from his browser, signs in with his own
// passkey on a site he is not a member of, and, knowing Ann's password, answers her second step
// with his own passkey; all are refused. Ann's confirmation, sent twice, counts once.

type Person = { email: string; password: string }

/** A virtual platform authenticator in this browser: it keeps passkeys, verifies the person, and says yes by itself. */
async function virtualAuthenticator(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  })
  return { credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials }
}

t.test('passkeys: added on the profile, then signing in alone, as the second step, and confirming, in Chromium', async (t) => {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const { app, clock } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}` } })
  await app.listen({ port, host: '127.0.0.1' })
  const ann = await personWithPassword(app)
  const bob = await personWithPassword(app)
  const browser = await launchChromium(t)

  async function signInWithPassword(page: Page, person: Person) {
    await page.goto(`${base}/demo/login`)
    await page.getByLabel('Email').fill(person.email)
    await page.getByLabel('Password').fill(person.password)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  }
  async function addPasskey(page: Page, name: string) {
    await page.goto(`${base}/demo/profile`)
    await page.getByLabel('Name of the passkey').fill(name)
    await page.getByRole('button', { name: 'Add a passkey' }).click()
    await page.waitForURL(`${base}/demo/profile/two_factor/passkey`)
  }

  // Ann adds a passkey: the browser makes it, the page keeps its public key.
  const annContext = await browser.newContext({ viewport: { width: 1000, height: 900 } })
  const page = await annContext.newPage()
  const annKeys = await virtualAuthenticator(annContext, page)
  await signInWithPassword(page, ann)
  await page.waitForURL(`${base}/demo/discussions`)
  await page.goto(`${base}/demo/profile`)
  await noViolations(t, page, 'the profile with the passkey form')
  await addPasskey(page, 'Laptop')
  await noViolations(t, page, 'the page that adds a passkey')
  await page.getByRole('button', { name: 'Create the passkey' }).click()
  await page.waitForURL(`${base}/demo/profile/two_factor/passkey/register`)
  t.match(await page.getByRole('status').textContent(), 'The passkey is added.')
  t.equal(await page.locator('[data-recovery-codes] code').count(), 10, 'the first factor comes with recovery codes')
  const stored = await annKeys.credentials()
  t.equal(stored.length, 1, 'one passkey in the authenticator')
  t.ok(stored[0].isResidentCredential, 'one that can sign in by itself')
  await page.getByRole('link', { name: 'I have kept them' }).click()
  t.match(await page.locator('[data-factor]').textContent(), /Laptop\s*passkey/)

  // Signed out: the passkey alone signs her in. Its answer is kept for Bob's try below.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(`${base}/demo/login`)
  await noViolations(t, page, 'the sign-in page with its passkey button')
  const answered = page.waitForRequest((request) => request.url().endsWith('/demo/login/passkey'))
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  const annAnswer = new URLSearchParams((await answered).postData() ?? '').get('passkey')!
  await page.waitForURL(`${base}/demo/discussions`)
  t.pass('signed in with the passkey alone')

  // With her password, the passkey is the second step.
  await page.getByRole('button', { name: 'Sign out' }).click()
  clock.advance(60_000)
  await signInWithPassword(page, ann)
  await page.waitForURL(`${base}/demo/login`)
  t.match(await page.locator('main').textContent(), 'Use your passkey for Site demo.')
  await noViolations(t, page, 'the second step with a passkey')
  await page.getByRole('button', { name: 'Use a passkey' }).click()
  await page.waitForURL(`${base}/demo/discussions`)
  t.pass('signed in with the password and the passkey')
  await page.goto(`${base}/demo/profile/api_tokens`)

  // After the sudo window, a new token asks to confirm with the passkey, then comes back.
  clock.advance(16 * 60_000)
  await page.getByLabel('Name', { exact: true }).fill('Export')
  await page.getByRole('button', { name: 'Create token' }).click()
  await page.waitForURL(/\/demo\/confirm\?for=token/)
  t.match(await page.locator('main').textContent(), 'To create a personal API token, use your passkey.')
  await noViolations(t, page, 'the confirmation with a passkey')
  const confirming = page.waitForRequest((request) => request.url().endsWith('/demo/confirm') && request.method() === 'POST')
  await page.getByRole('button', { name: 'Confirm with a passkey' }).click()
  const confirmation = (await confirming).postData()!
  await page.waitForURL(`${base}/demo/profile/api_tokens`)
  // The same answer again, from the same browser and session: its challenge is used up.
  const again = await page.request.post(`${base}/demo/confirm`, { data: confirmation, headers: { 'content-type': 'application/x-www-form-urlencoded' }, maxRedirects: 0 })
  t.equal(again.status(), 401, 'a passkey answer confirms once')
  t.match(await again.text(), 'That passkey did not work. Try again.')
  await page.getByLabel('Name', { exact: true }).fill('Export')
  await page.getByRole('button', { name: 'Create token' }).click()
  t.match(await page.locator('#new-token').inputValue(), /^service_pat_/, 'the token, once confirmed')

  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['factor_added', 'sign_in_succeeded', 'confirmed'], offset: 0, limit: 10 })
  t.match(events.find((e) => e.kind === 'factor_added'), { detail: { kind: 'passkey', name: 'Laptop' } })
  t.same(
    events.filter((e) => e.kind === 'sign_in_succeeded').map((e) => e.detail),
    [{ second_factor: 'passkey' }, { with: 'passkey' }, {}],
    'the second step, the passkey alone, the first password sign-in',
  )

  // Bob, in his own browser, with a passkey of his own.
  const bobContext = await browser.newContext({ viewport: { width: 1000, height: 900 } })
  const bobPage = await bobContext.newPage()
  await virtualAuthenticator(bobContext, bobPage)
  await signInWithPassword(bobPage, bob)
  await bobPage.waitForURL(`${base}/demo/discussions`)
  await addPasskey(bobPage, 'Bob laptop')
  await bobPage.getByRole('button', { name: 'Create the passkey' }).click()
  await bobPage.waitForURL(`${base}/demo/profile/two_factor/passkey/register`)
  await bobPage.getByRole('button', { name: 'Sign out' }).click()
  await bobPage.waitForURL(`${base}/demo/login`)

  // Ann's answer, replayed from Bob's browser: its challenge was made for Ann's browser, and is used.
  const csrf = await bobPage.locator('form[action$="/login/passkey"] input[name="_csrf"]').inputValue()
  const replay = await bobPage.request.post(`${base}/demo/login/passkey`, { form: { _csrf: csrf, passkey: annAnswer }, maxRedirects: 0 })
  t.equal(replay.status(), 401, "Ann's answer does not sign Bob's browser in")
  t.match(await replay.text(), 'That passkey does not sign in to an account of this site.')

  // Another site on the same host: Bob's passkey is his, but he is not on its staff nor a customer.
  await app.sites.add('other', 'Other')
  await bobPage.goto(`${base}/other/login`)
  await bobPage.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await bobPage.waitForURL(`${base}/other/login/passkey`)
  t.match(await bobPage.getByRole('alert').first().textContent(), 'That passkey does not sign in to an account of this site.', 'not a door into another site')

  // Bob knows Ann's password; at her second step, his browser is made to offer any passkey, and his own answers.
  await signInWithPassword(bobPage, ann)
  await bobPage.waitForURL(`${base}/demo/login`)
  const offered = bobPage.locator('button[data-ceremony="second_step"]')
  const anyPasskey = JSON.stringify({ ...JSON.parse((await offered.getAttribute('data-options'))!), allowCredentials: [] })
  await offered.evaluate((button, value) => (button as unknown as { setAttribute(name: string, value: string): void }).setAttribute('data-options', value), anyPasskey)
  await bobPage.getByRole('button', { name: 'Use a passkey' }).click()
  await bobPage.waitForLoadState()
  t.match(await bobPage.getByRole('alert').first().textContent(), 'That passkey did not work.', "Bob's passkey is not Ann's second factor")
  t.equal(new URL(bobPage.url()).pathname, '/demo/login/second_step', 'still at the second step')
  const failed = await app.securityLog.list({ userId: ann.user.id, kinds: ['second_factor_failed'], offset: 0, limit: 5 })
  t.equal(failed.events.length, 2, "the replayed confirmation, and Bob's answer at her second step")
})
