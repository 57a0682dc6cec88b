import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { launchChromium } from '../fixtures/browser.ts'
import { startServer } from '../fixtures/server.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.

t.test('a supporter manages a token in a real browser against a real server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-browser-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer(t, { SERVICE_DB: join(dir, 'service.db') })
  await new Promise((resolve) => setTimeout(resolve, 200))
  const email = /Sign in {10}(\S+)/.exec(server.output())![1]
  const password = /Password {9}(\S+)/.exec(server.output())![1]
  const api = (method: string, path: string, token: string) =>
    fetch(`${server.base}${path}`, { method, headers: { accept: 'application/vnd.service-v1+json', authorization: `Bearer ${token}` } })

  const browser = await launchChromium(t)
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } })

  await page.goto(`${server.base}/demo/profile/api_tokens`)
  t.match(page.url(), `${server.base}/demo/login?next=`, 'sent to sign in')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(`${server.base}/demo/profile/api_tokens`)
  t.pass('brought back to the token page')

  await page.getByLabel('Name').fill('Browser test')
  await page.getByLabel('Read only').check()
  await page.getByRole('button', { name: 'Create token' }).click()
  const value = await page.locator('#new-token').inputValue()
  t.match(value, /^service_pat_\w{49}$/, 'the value is shown')
  t.ok(await page.getByRole('button', { name: 'Copy' }).isVisible(), 'the copy button shows with JavaScript')
  const shot = join(dir, 'api-tokens.png')
  await page.screenshot({ path: shot, fullPage: true })
  t.ok(existsSync(shot), 'screenshot saved')
  // SCREENSHOT_DIR keeps a copy for a person to look at (the temporary folder goes with the test).
  if (process.env.SCREENSHOT_DIR) copyFileSync(shot, join(process.env.SCREENSHOT_DIR, 'api-tokens.png'))

  t.equal((await api('GET', '/demo/discussions', value)).status, 200, 'GET with the new token')
  const write = await api('POST', '/demo/discussions', value)
  t.equal(write.status, 403, 'POST with the read-only token')
  t.match(write.headers.get('www-authenticate'), 'error="insufficient_scope"')

  await page.reload()
  t.notOk(await page.locator('#new-token').count(), 'a reload does not show the value again')
  t.notMatch(await page.content(), value)
  const row = page.locator('tr', { hasText: 'Browser test' })
  t.match(await row.textContent(), `service_pat_...${value.slice(-4)}`, 'only its end')

  await row.getByRole('link', { name: 'Revoke' }).click()
  await page.getByRole('button', { name: 'Revoke token' }).click()
  await page.waitForURL(/revoked=1/)
  t.match(await page.content(), 'The token was revoked.')
  const revoked = await api('GET', '/demo/discussions', value)
  t.equal(revoked.status, 401, 'refused once revoked')
  t.match(revoked.headers.get('www-authenticate'), 'error="invalid_token"')

  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(`${server.base}/demo/login`)
  await page.goto(`${server.base}/demo/profile/api_tokens`)
  t.match(page.url(), '/demo/login?next=', 'signed out')
})
