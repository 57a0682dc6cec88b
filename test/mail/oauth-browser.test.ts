import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { launchChromium, noViolations, signInOnPage } from '../fixtures/browser.ts'
import { childEnv } from '../fixtures/child.ts'
import { dovecot, haveDovecot } from '../fixtures/dovecot.ts'
import { mailServer, readMail } from '../fixtures/mail.ts'
import { DESK_CLIENT, mailProvider } from '../fixtures/mail-provider.ts'
import { BIN, startServer } from '../fixtures/server.ts'
import { until as waitFor } from '../fixtures/until.ts'

// Engines: one: Chromium and a service process on its own SQLite file; the stores' part runs on both in test/mail/oauth.test.ts.
// Issue 66, done as its people would do it, with no network: the operator registers the service's
// application at "Microsoft 365" (a provider of the tests, oidc-provider, with tokens of eight
// seconds) with the command line; an administrator connects the mailbox in Chromium, signing in at
// the provider's pages; a customer's mail is fetched from Dovecot, which takes the token by XOAUTH2
// and asks the provider about it; the reply leaves by an SMTP server that does the same; the token
// runs out and is renewed without a message missed; the provider revokes the grant, the page says
// so and the administrators are mailed; "Connect again" mends it.

if (!haveDovecot(t)) process.exit(0)

const ADDRESS = 'support@acme.example'

/** A real process and a browser: a longer wait, looked at less often. */
const until = <T>(what: string, check: () => Promise<T | undefined | false | null> | T | undefined | false | null, ms = 20_000) => waitFor(what, check, ms, 100)


const customerMail = (subject: string, id: string) =>
  [`From: Carol Customer <carol@customer.example>`, `To: ${ADDRESS}`, `Subject: ${subject}`, `Message-ID: <${id}@customer.example>`, 'Date: Sun, 01 Mar 2026 11:00:00 +0000', 'Content-Type: text/plain; charset=utf-8', '', `About ${subject}.`, ''].join('\r\n')

t.test('an administrator connects a Microsoft 365 mailbox in the browser; mail comes and goes on renewed tokens; a revoked grant is said and mended', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-oauth-mail-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const service = await mailServer(t)
  const env = { SERVICE_DB: join(dir, 'service.db'), SERVICE_MAIL_FETCH_SECONDS: '1', SERVICE_SMTP_URL: service.url, SERVICE_MAIL_FROM: 'Service Desk <desk@service.example>' }
  const server = await startServer(t, env)
  const email = (await until('the banner', () => /Sign in {10}(\S+)/.exec(server.output())))[1]!
  const password = /Password {9}(\S+)/.exec(server.output())![1]!

  const provider = await mailProvider(t, { redirectUris: [`${server.base}/demo/admin/mail/connected`], accessSeconds: 8 })
  const imap = await dovecot(t, { introspection: provider.introspection })
  imap.user(ADDRESS)
  const smtp = await mailServer(t, { checkToken: (token) => provider.ownerOf(token) })

  // The operator registers the application, its secret on standard input.
  const registered = spawnSync(
    process.execPath,
    [BIN, 'mail-provider', 'add', 'microsoft', '--client-id', DESK_CLIENT.id, '--issuer', provider.issuer, '--imap', `imap://127.0.0.1:${imap.port}`, '--smtp', `smtp://127.0.0.1:${new URL(smtp.url).port}`, '--scope', 'openid email offline_access'],
    { env: childEnv({ ...env, SERVICE_BASE_URL: server.base }), input: `${DESK_CLIENT.secret}\n`, encoding: 'utf8' },
  )
  t.equal(registered.status, 0, registered.stderr)
  t.match(registered.stdout, `mail provider microsoft registered (Microsoft 365: ${provider.issuer}`)
  t.match(registered.stdout, `${server.base}/demo/admin/mail/connected`, 'the redirect address to register at the provider')
  t.notMatch(registered.stdout + registered.stderr, DESK_CLIENT.secret)

  const browser = await launchChromium(t)
  const page = await browser.newPage()
  await signInOnPage(page, server.base, { email, password })
  await page.goto(`${server.base}/demo/admin/mail`)
  await noViolations(t, page, 'the mail page with a provider to connect')

  // To the provider's sign-in and back.
  await page.getByRole('button', { name: 'Connect Microsoft 365' }).click()
  await page.waitForURL(`${provider.issuer}/**`, { waitUntil: 'domcontentloaded' })
  await page.locator('input[name=login]').fill(ADDRESS)
  await page.locator('input[name=password]').fill('the password at the provider')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.waitForURL(`${server.base}/demo/admin/mail?connected=*`)
  t.match(await page.getByRole('status').textContent(), `${ADDRESS} is connected`)
  t.match(await page.locator(`tr[data-mailbox="${ADDRESS}"]`).textContent(), /signed in at Microsoft 365 with its token/)
  await noViolations(t, page, 'the mail page with a connected mailbox')

  // A customer writes; the mail is fetched with the token.
  await imap.deliver(ADDRESS, [customerMail('The printer smokes', 'first')])
  await until('the first discussion', async () => {
    await page.goto(`${server.base}/demo/discussions`)
    return (await page.getByRole('link', { name: 'The printer smokes' }).count()) > 0
  })

  // The team answers on the page; the reply leaves by the provider's SMTP server, with the token.
  await page.getByRole('link', { name: 'The printer smokes' }).click()
  await page.getByLabel('Message').fill('Unplug it, please.')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  const reply = await until('the reply sent', () => smtp.mails.find((mail) => mail.to.includes('carol@customer.example')))
  t.match(readMail(reply).text, /Unplug it, please\./)
  t.ok(smtp.state.logins.length > 0 && smtp.state.logins.every((login) => login === `${ADDRESS}:token`), 'every mail of the mailbox left signed in with its token')

  // The token runs out (eight seconds): renewed, and mail before and after it is taken.
  await imap.deliver(ADDRESS, [customerMail('The scanner jams', 'second')])
  await until('a renewal', () => provider.refreshes >= 1, 30_000)
  await imap.deliver(ADDRESS, [customerMail('The fax is silent', 'third')])
  await until('both discussions', async () => {
    await page.goto(`${server.base}/demo/discussions`)
    return (await page.getByRole('link', { name: 'The scanner jams' }).count()) > 0 && (await page.getByRole('link', { name: 'The fax is silent' }).count()) > 0
  })

  // The provider's administrator removes the application's consent: the grant ends.
  await provider.revokeEverything()
  await until('the page says the provider refused', async () => {
    await page.goto(`${server.base}/demo/admin/mail`)
    return (await page.locator('[data-oauth-problem]').count()) > 0
  }, 30_000)
  t.match(await page.locator('[data-oauth-problem]').textContent(), /Microsoft 365 refused to renew the mailbox's access \(invalid_grant/)
  const told = await until('the administrators told', () => service.mails.find((mail) => readMail(mail).subject.includes('cannot sign in')))
  t.same(told.to, [email])

  // Connect again: the provider asks for consent again, and the mailbox works.
  await page.getByRole('button', { name: `Connect ${ADDRESS} again` }).click()
  await page.waitForURL(`${provider.issuer}/**`, { waitUntil: 'domcontentloaded' })
  if ((await page.locator('input[name=login]').count()) > 0) {
    await page.locator('input[name=login]').fill(ADDRESS)
    await page.locator('input[name=password]').fill('the password at the provider')
    await page.getByRole('button', { name: 'Sign-in' }).click()
  }
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.waitForURL(`${server.base}/demo/admin/mail?connected=*`)
  t.equal(await page.locator('[data-oauth-problem]').count(), 0)
  await imap.deliver(ADDRESS, [customerMail('The lights flicker', 'fourth')])
  await until('the discussion after connecting again', async () => {
    await page.goto(`${server.base}/demo/discussions`)
    return (await page.getByRole('link', { name: 'The lights flicker' }).count()) > 0
  })
  t.notMatch(server.output(), DESK_CLIENT.secret, 'the client secret is never logged')
})
