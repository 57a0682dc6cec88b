import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { launchChromium } from '../fixtures/browser.ts'
import { main } from '../../cli/main.ts'
import { systemClock } from '../../lib/clock.ts'
import { mailServer, readMail } from '../fixtures/mail.ts'
import { startServer } from '../fixtures/server.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Issue 34, done when: an administrator works the inventory and the token policy in Chromium
// against a real server, with a real SMTP server receiving the owners' mails; the people the
// operator adds at the command line (the same database file) are the other side.

t.test('an administrator filters the inventory, revokes two tokens with a reason, and tightens the policy with its dry run', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-admin-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const smtp = await mailServer(t)
  const env = { SERVICE_DB: join(dir, 'service.db'), SERVICE_SMTP_URL: smtp.url, SERVICE_MAIL_FROM: 'Desk <desk@example.test>' }
  const server = await startServer(t, env)
  await new Promise((resolve) => setTimeout(resolve, 200))
  const adminEmail = /Sign in {10}(\S+)/.exec(server.output())![1]
  const adminPassword = /Password {9}(\S+)/.exec(server.output())![1]
  /** A command of the operator, on the server's database. */
  const cli = async (...argv: string[]) => {
    let stdout = ''
    const code = await main(argv, { stdout: (text) => void (stdout += text), stderr: () => {}, env, readStdin: async () => '', clock: systemClock })
    t.equal(code, 0, argv.join(' '))
    return stdout.trim()
  }
  const annPassword = /password: (\S+)/.exec(await cli('user', 'add', 'ann@example.test', '--name', 'Ann'))![1]
  await cli('user', 'add', 'bob@example.test', '--name', 'Bob')
  await cli('staff', 'add', 'demo', 'ann@example.test')
  await cli('staff', 'add', 'demo', 'bob@example.test')
  const annToken = await cli('token', 'create', 'demo', 'ann@example.test', '--name', 'Nightly export', '--expires', '365')
  const bobToken = await cli('token', 'create', 'demo', 'bob@example.test', '--name', 'CI', '--access', 'read')
  const annKept = await cli('token', 'create', 'demo', 'ann@example.test', '--name', 'Kept', '--access', 'read', '--expires', '365')
  const api = (path: string, token: string) => fetch(`${server.base}${path}`, { headers: { accept: 'application/vnd.service-v1+json', authorization: `Bearer ${token}` } })

  const browser = await launchChromium(t)
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  await page.goto(`${server.base}/demo/login`)
  await page.getByLabel('Email').fill(adminEmail)
  await page.getByLabel('Password').fill(adminPassword)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(/\/demo\//)
  await page.getByRole('link', { name: 'Administration' }).click()
  await page.waitForURL(`${server.base}/demo/admin/credentials`)

  // Filter: personal tokens that expire within 100 days (Bob's CI, and the first-run token).
  await page.getByLabel('Kind').selectOption('personal_token')
  await page.getByLabel('Expires within (days)').fill('100')
  await page.getByRole('button', { name: 'Filter' }).click()
  await page.waitForURL(/expires_within_days=100/)
  const rows = page.locator('tbody tr')
  t.same((await rows.allTextContents()).map((text) => /(\S+@\S+)/.exec(text)![1]).sort(), [adminEmail, 'bob@example.test'].sort(), 'filtered to two tokens')
  await page.getByLabel('Owner').fill('example.test')
  await page.getByLabel('Expires within (days)').fill('')
  await page.getByRole('button', { name: 'Filter' }).click()
  await page.waitForURL(/owner=example.test/)
  t.equal(await rows.count(), 3, "ann's two tokens and bob's")

  await page.getByRole('checkbox', { name: 'Choose Nightly export of ann@example.test' }).check()
  await page.getByRole('checkbox', { name: 'Choose CI of bob@example.test' }).check()
  await page.getByLabel('Reason for revoking the chosen credentials').fill('Moved to the new export service')
  await page.getByRole('button', { name: 'Revoke chosen' }).click()
  await page.waitForURL(/revoked=2/)
  t.match(await page.getByRole('status').textContent(), '2 credentials revoked')
  t.match(page.url(), 'owner=example.test', 'back on the same filter')
  for (const token of [annToken, bobToken]) t.equal((await api('/demo', token)).status, 401, 'refused on its next request')
  t.equal((await api('/demo', annKept)).status, 200, "ann's other token still works")

  const waitForMails = async (n: number) => {
    for (let i = 0; i < 100 && smtp.mails.length < n; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await waitForMails(2)
  const revokedMails = smtp.mails.slice(0, 2).map((mail) => ({ to: mail.to[0], ...readMail(mail) }))
  t.same(revokedMails.map((mail) => mail.to).sort(), ['ann@example.test', 'bob@example.test'], 'both owners mailed')
  for (const mail of revokedMails) {
    t.match(mail.subject, 'Access to Demo revoked by an administrator')
    t.match(mail.text, 'The reason given: Moved to the new export service')
    t.match(mail.text, adminEmail, 'who revoked')
    for (const value of [annToken, bobToken, annKept]) t.notMatch(mail.text, value, 'never a token value')
  }
  const log = JSON.parse(await cli('security-log', 'demo', '--json')) as Array<{ kind: string; actor: string; detail: Record<string, unknown> }>
  const revocations = log.filter((event) => event.kind === 'token_revoked')
  t.equal(revocations.length, 2, 'two log events')
  for (const event of revocations) t.match(event, { actor: 'administrator', detail: { reason: 'Moved to the new export service', by: adminEmail } })

  // The policy: 30 days at most; the dry run counts ann's kept token and the first-run token.
  await page.getByRole('navigation', { name: 'Administration' }).getByRole('link', { name: 'Token policy' }).click()
  await page.getByLabel('Longest lifetime (days)').fill('30')
  await page.getByRole('button', { name: 'Save policy' }).click()
  const dryRun = page.locator('[data-dry-run]')
  t.match(await dryRun.textContent(), /2 active tokens of 2\s+people last longer than 30 days/)
  await page.getByRole('button', { name: 'Save and shorten them' }).click()
  await page.waitForURL(/saved=1/)
  t.match(await page.getByRole('status').textContent(), '2 tokens were shortened')
  await waitForMails(4)
  const shortMail = smtp.mails.slice(2).map((mail) => ({ to: mail.to[0], ...readMail(mail) })).find((mail) => mail.to === 'ann@example.test')
  t.match(shortMail, { subject: 'Your API tokens on Demo expire sooner', text: /"Kept": now expires/ }, 'the owner is told the new date')
  const self = (await (await api('/demo/personal_tokens/self', annKept)).json()) as { expires_at: string }
  t.ok(Date.parse(self.expires_at) <= Date.now() + 30 * 86_400_000 + 60_000, 'the token now ends within 30 days')

  // Ann, a supporter: the token page offers 7 and 30 days only; the administration is not hers.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(/\/demo\/login/)
  await page.getByLabel('Email').fill('ann@example.test')
  await page.getByLabel('Password').fill(annPassword)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(/\/demo\//)
  await page.goto(`${server.base}/demo/profile/api_tokens`)
  t.same(await page.locator('#expires option').allTextContents(), ['7 days', '30 days'], 'only 7 and 30 days')
  const row = page.locator('tr', { hasText: 'Kept' })
  t.match(await row.textContent(), /in (29|30) days/, 'the token page shows the new date')
  t.equal(await page.getByRole('link', { name: 'Administration' }).count(), 0, 'no Administration link')
  for (const path of ['/demo/admin', '/demo/admin/credentials', '/demo/admin/policy']) {
    const res = await page.goto(`${server.base}${path}`)
    t.equal(res?.status(), 403, `403 on ${path}`)
  }
  for (const path of ['/demo/credentials', '/demo/policy']) t.equal((await api(path, annKept)).status, 403, `403 on the API's ${path}`)
})
