import { join } from 'node:path'
import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { launchChromium, noViolations, signInOnPage } from '../fixtures/browser.ts'
import { freePort } from '../fixtures/server.ts'
import QRCode from 'qrcode'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// Issue 36 in Chromium: a supporter signs in, filters the queue, opens a discussion by the link
// the API gives, replies in public and as an internal note, resolves it, and sees the API reflect
// each change (and an API change on the page); axe-core over the queue, a discussion and the reply
// form with its error; the queue at 360 px wide.

t.test('a supporter works a discussion from the queue in Chromium, and the API sees each change', async (t) => {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const { app } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}` } })
  await app.listen({ port, host: '127.0.0.1' })
  const ann = await personWithPassword(app)
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const billing = await app.categories.add(ann.site.id, 'Billing', true)
  const posted = (title: string, categoryId: number) =>
    app.discussions.create({ siteId: ann.site.id, categoryId, title, body: `About ${title.toLowerCase()}.`, public: true, supporterId: ann.user.id, onBehalfOf: { email: 'carla@example.test', name: 'Carla' }, via: 'api' })
  await posted('Login trouble', general.id)
  const { discussion } = await posted('Refund for order 1042', billing.id)
  const asApi = async () => (await app.inject({ url: `/demo/discussions/${discussion.number}`, headers: { ...api.bearer, accept: V1 } })).json()

  const browser = await launchChromium(t)
  const page = await (await browser.newContext({ viewport: { width: 1000, height: 900 } })).newPage()
  await signInOnPage(page, base, ann)
  t.ok(await page.getByRole('link', { name: 'Discussions' }).isVisible(), 'signed in, the queue, with Discussions first in the navigation')
  t.equal(await page.locator('[data-queue] tbody tr').count(), 2)
  await noViolations(t, page, 'the queue')
  // SCREENSHOT_DIR keeps the README's pictures (docs/queue.png, docs/discussion.png).
  const keep = (name: string) => (process.env.SCREENSHOT_DIR ? page.screenshot({ path: join(process.env.SCREENSHOT_DIR, name), fullPage: true }) : undefined)
  await keep('queue.png')

  await page.getByLabel('Category').selectOption({ label: 'Billing' })
  await page.getByRole('button', { name: 'Show' }).click()
  await page.waitForURL(new RegExp(`/demo/discussions\\?category=${billing.id}(&q=)?(&tag=)?(&sort=)?$`))
  t.same(await page.locator('[data-queue] tbody td[data-label="Title"] a').allTextContents(), ['Refund for order 1042'], 'filtered by category')
  t.equal(await page.locator('[data-queue] tbody td[data-label="Title"] [data-waiting]').count(), 1, "marked: the customer's, waiting for the team")

  // The link the API gives is the page the queue opens.
  const { html_href: htmlHref } = await asApi()
  await page.getByRole('link', { name: 'Refund for order 1042' }).click()
  await page.waitForURL(htmlHref)
  t.match(await page.locator('.comment').first().textContent(), 'About refund for order 1042.')
  await noViolations(t, page, 'a discussion')

  // A reply with nothing in it: the error, then a public reply and an internal note.
  await page.getByLabel('Message').fill('   ')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  t.match(await page.getByRole('alert').textContent(), 'Write a message first.')
  await noViolations(t, page, 'the reply form with its error')
  await page.getByLabel('Message').fill('The refund is on its way.')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await page.waitForURL(`${htmlHref}?done=sent#comment-2`)
  await page.getByLabel('Message').fill('Refunded through the bank, not the card.')
  await page.getByLabel('An internal note: support staff only').check()
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await page.waitForURL(`${htmlHref}?done=noted#comment-3`)
  t.match(await page.locator('.comment.internal').textContent(), 'Internal note: the customer does not see it')

  // A reply with files (issue 47): chosen in the form, shown on the page, listed by the API. The
  // picture is a QR code of 160 px, a PNG that qrcode (a dependency already) draws.
  const receipt = await QRCode.toBuffer('Receipt for order 1042', { width: 160 })
  await page.getByLabel('Message').fill('The receipt, and the bank’s note.')
  await page.getByRole('button', { name: /^Files/ }).setInputFiles([
    { name: 'receipt.png', mimeType: 'image/png', buffer: receipt },
    { name: 'bank note.txt', mimeType: 'text/plain', buffer: Buffer.from('Refund 1042 sent.') },
  ])
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await page.waitForURL(`${htmlHref}?done=sent#comment-4`)
  const files = page.locator('#comment-4 .files')
  t.same(await files.getByRole('link').allTextContents(), ['', 'receipt.png', 'bank note.txt'], 'the preview, then each name')
  t.equal(await files.locator('img').evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).naturalWidth), 160, 'the image is shown')
  await noViolations(t, page, 'a discussion with files')
  const withFiles = (await app.inject({ url: `/demo/discussions/${discussion.number}/comments/4`, headers: { ...api.bearer, accept: V1 } })).json()
  t.same(withFiles.attachments.map((a: { name: string; content_type: string }) => [a.name, a.content_type]), [['receipt.png', 'image/png'], ['bank note.txt', 'text/plain']], 'the API lists them')
  await keep('discussion.png')
  const comments = (await app.inject({ url: `/demo/discussions/${discussion.number}/comments`, headers: { ...api.bearer, accept: V1 } })).json().comments
  t.match(comments.slice(1), [{ body: 'The refund is on its way.', internal: false }, { body: 'Refunded through the bank, not the card.', internal: true }], 'the API has both')
  t.equal((await asApi()).state, 'open', 'the public reply opened it')

  await page.getByRole('button', { name: 'Resolve', exact: true }).click()
  await page.waitForURL(`${htmlHref}?done=resolve`)
  t.equal(await page.locator('[data-state]').textContent(), 'resolved')
  t.equal((await asApi()).state, 'resolved', 'the API sees it resolved')

  // The API's change, seen on the page.
  await app.inject({ method: 'POST', url: `/demo/discussions/${discussion.number}/unresolve`, headers: { ...api.bearer, accept: V1 } })
  await page.reload()
  t.equal(await page.locator('[data-state]').textContent(), 'open', 'the API unresolved it')

  // Custom fields as columns of her queue (issue 72), chosen under Columns.
  await app.fields.add(ann.site.id, { key: 'order_number', name: 'Order number', kind: 'text' }, { id: null, name: 'the operator', via: 'cli' })
  await app.discussions.update(ann.site.id, discussion.number, { fields: { order_number: 'A-1042' } })
  await page.goto(`${base}/demo/discussions`)
  await page.getByText('Columns', { exact: true }).click()
  await page.getByLabel('Order number').check()
  await page.getByRole('button', { name: 'Show these' }).click()
  await page.locator('th[data-column="order_number"]').waitFor()
  t.equal(await page.locator(`tr[data-discussion="${discussion.number}"] td[data-field="order_number"]`).textContent(), 'A-1042', 'the value in its column')
  await noViolations(t, page, 'the queue with a column of a field')

  // On a phone: the queue at 360 px wide, nothing wider than the screen.
  const phone = await (await browser.newContext({ viewport: { width: 360, height: 740 } })).newPage()
  await phone.context().addCookies((await page.context().cookies()).map((c) => ({ ...c })))
  await phone.goto(`${base}/demo/discussions`)
  t.ok(await phone.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth <= 360), 'no sideways scrolling at 360 px')
  await noViolations(t, phone, 'the queue on a phone')
})
