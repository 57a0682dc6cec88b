import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { launchChromium, noViolations, signInOnPage } from '../fixtures/browser.ts'
import { startServer } from '../fixtures/server.ts'
import { receiver } from '../fixtures/webhooks.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Issue 50 on the administration page, in Chromium at a phone's width against a real server: an
// administrator is refused a private address with its reason, adds a webhook (the secret shown
// once), sends the test event, which a real receiver verifies with the secret, and sees its try in
// the log. axe-core finds nothing on either page.

t.test('an administrator adds a webhook in the browser, tests it, and reads its log', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-webhooks-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const hook = await receiver(t, (response) => response.writeHead(204).end())
  const server = await startServer(t, { SERVICE_DB: join(dir, 'service.db'), SERVICE_WEBHOOK_ALLOW: '127.0.0.0/8' })
  await new Promise((resolve) => setTimeout(resolve, 200))
  const email = /Sign in {10}(\S+)/.exec(server.output())![1]!
  const password = /Password {9}(\S+)/.exec(server.output())![1]!

  const browser = await launchChromium(t)
  const page = await browser.newPage({ viewport: { width: 360, height: 800 } })
  await signInOnPage(page, server.base, { email, password })
  await page.goto(`${server.base}/demo/admin/webhooks`)
  await noViolations(t, page, 'the list and the form')

  await page.getByLabel('Address').fill('http://169.254.169.254/latest')
  await page.getByRole('button', { name: 'Add the webhook' }).click()
  await t.resolves(page.getByRole('alert').getByText('169.254.169.254 is a link-local address').waitFor(), 'refused, with the reason')

  await page.getByLabel('Address').fill(hook.url)
  await page.getByLabel('What it is for').fill('Chat room')
  await page.getByLabel('comment.created').uncheck()
  await page.getByRole('button', { name: 'Add the webhook' }).click()
  const secret = (await page.locator('[data-secret]').textContent())!.trim()
  t.match(secret, /^whsec_/, 'the secret, shown once')
  t.match(await page.getByRole('status').textContent(), `${hook.url} is told of discussion.created.`)
  await noViolations(t, page, 'the webhook with its secret')

  await page.getByRole('button', { name: 'Send a test event' }).click()
  await page.waitForURL(/done=test$/)
  for (let i = 0; i < 200 && hook.received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  const [delivery] = hook.received
  t.match(new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>), { type: 'webhook.test', data: { webhook: { description: 'Chat room' } } })
  for (let i = 0; i < 50 && (await page.locator('[data-delivery]').count()) === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    await page.reload()
  }
  t.match(await page.locator('[data-delivery]').first().textContent(), /webhook\.test[\s\S]*204/)
  t.notMatch(await page.content(), secret, 'the secret is not shown again')
  await noViolations(t, page, 'the log')
})
