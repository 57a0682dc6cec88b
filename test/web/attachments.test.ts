import t, { type Test } from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { form, PNG } from '../fixtures/files.ts'
import { signedInPerson, webClient } from '../fixtures/web.ts'

// Engines: one: the reply form's files and the conversation's list of them; the file store runs on both in test/discussions/attachments.test.ts. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// The reply form takes files, and the conversation lists them (issue 47): through app.inject on
// both engines; test/web/attachments-browser.test.ts sends one from Chromium.

async function discussionWithStaff(t: Test) {
  const { app } = await buildTestApp(t)
  const ann = await signedInPerson(app, { email: 'ann@example.test' })
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer on fire', body: 'Help.', supporterId: api.user.id, onBehalfOf: { email: 'carol@example.test' }, via: 'api' })
  const path = '/demo/discussions/1'
  await ann.web.get(path)
  return { app, ann, api, path }
}

t.test('a supporter replies with files from the page; the page and the API list them; the page sends them back', async (t) => {
  const { app, ann, api, path } = await discussionWithStaff(t)
  const notes = Buffer.from('Serial number: 12345\n')
  const sent = await ann.web.postFiles(`${path}/reply`, { body: 'Photos and the serial number.', internal: 'no', file: [{ name: 'printer.png', bytes: PNG }, { name: 'serial.txt', bytes: notes }] })
  t.equal(sent.statusCode, 303)
  t.equal(sent.headers.location, `https://help.example.test${path}?done=sent#comment-2`)

  const page = (await ann.web.get(path)).body
  const files = [...page.matchAll(/<li>\s*(?:<a href="([^"]+)" class="thumbnail"><img src="\1" alt="([^"]+)" loading="lazy"><\/a>\s*)?<a href="([^"]+)">([^<]+)<\/a> <span class="muted">([^<]+)<\/span>/g)]
  t.same(files.map((m) => [Boolean(m[1]), m[4], m[5]]), [[true, 'printer.png', '66 bytes'], [false, 'serial.txt', '21 bytes']], 'names, sizes, and the image shown small')
  t.match(page, /<input type="file" id="reply-files" name="file" multiple>/)
  t.match(page, /up to 10, 10 MB each/)
  // A browser sends an empty file input as a part with no filename: no file.
  const bare = await ann.web.postFiles(`${path}/reply`, { body: 'Nothing chosen.', internal: 'no', file: { name: '', bytes: Buffer.alloc(0) } })
  t.equal(bare.statusCode, 303)
  t.equal((await app.files.ofDiscussion((await app.discussions.get(ann.site.id, 1)).id)).length, 2, 'the empty input made no file')

  const seen = await app.inject({ url: `/demo/discussions/1/comments/2`, headers: api.bearer })
  t.same(seen.json().attachments.map((a: { name: string; size: number }) => [a.name, a.size]), [['printer.png', 66], ['serial.txt', 21]], 'the API lists them')

  const [image, text] = files.map((m) => new URL(m[3]!).pathname)
  const got = await ann.web.get(image!)
  t.equal(got.statusCode, 200)
  t.equal(got.headers['content-type'], 'image/png')
  t.equal(got.headers['content-disposition'], 'inline; filename="printer.png"')
  t.equal(got.headers['x-content-type-options'], 'nosniff')
  t.match(got.headers['content-security-policy'], /^sandbox/)
  const textFile = await app.inject({ url: text!, headers: { cookie: [...ann.web.jar].map(([k, v]) => `${k}=${v}`).join('; ') } })
  t.equal(textFile.body, notes.toString(), 'byte for byte')
  t.equal(textFile.headers['content-disposition'], 'attachment; filename="serial.txt"')
})

t.test('what the form refuses keeps no file: a blank message, a file too large, a missing or foreign CSRF token', async (t) => {
  const { app, ann, path } = await discussionWithStaff(t)
  const usage = () => app.files.usage(ann.site.id)

  const blank = await ann.web.postFiles(`${path}/reply`, { body: '  ', internal: 'no', file: { name: 'a.txt', bytes: Buffer.from('kept?') } })
  t.equal(blank.statusCode, 400)
  t.match(blank.body, /Write a message first\. Choose the files again too\./)
  t.equal(await usage(), 0)

  await ann.web.get(path)
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await ann.web.get(path)).body)![1]!
  const mallory = await signedInPerson(app, { email: 'mallory@example.test' })
  await mallory.web.get(path)
  // Ann's token in Mallory's session, and no token at all: both refused, nothing kept.
  for (const token of [{ _csrf: csrf }, {}] as Array<Record<string, string>>) {
    const res = await mallory.web.request('POST', `${path}/reply`, await form({ ...token, body: 'x', file: { name: 'b.txt', bytes: Buffer.from('forged') } }))
    t.equal(res.statusCode, 403)
    t.match(res.body, /This form has expired/)
  }
  t.equal(await usage(), 0)
  t.equal((await app.discussions.get(ann.site.id, 1)).commentsCount, 1, 'and no reply was written')
})

t.test('files over the limits: the page says so, and keeps nothing', async (t) => {
  const { app } = await buildTestApp(t, { config: { files: { fileBytes: 10 * 1024 * 1024, siteBytes: 200 * 1024 * 1024 } } })
  const ann = await signedInPerson(app, { email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'Help.', supporterId: ann.user.id, via: 'api' })
  const path = '/demo/discussions/1'
  await ann.web.get(path)
  const big = (n: number) => ({ name: `scan-${n}.bin`, bytes: Buffer.alloc(9 * 1024 * 1024, n) })
  const together = await ann.web.postFiles(`${path}/reply`, { body: 'Three scans.', internal: 'no', file: [big(1), big(2), big(3)] })
  t.equal(together.statusCode, 413)
  t.match(together.body, /That was not sent: a message carries at most 25 MB of files\. Choose fewer or smaller files/)
  t.match(together.body, />Three scans\.<\/textarea>/, 'what was typed is kept')
  await ann.web.get(path)
  const one = await ann.web.postFiles(`${path}/reply`, { body: 'One too big.', internal: 'no', file: { name: 'huge.bin', bytes: Buffer.alloc(10 * 1024 * 1024 + 1, 9) } })
  t.equal(one.statusCode, 413)
  t.match(one.body, /That was too large.*A file may hold at most 10 MB\. Go back and choose fewer or smaller files\./s)
  t.equal(await app.files.usage(ann.site.id), 0, 'nothing kept')
  t.equal((await app.discussions.get(ann.site.id, 1)).commentsCount, 1)
})

t.test("a reply's files past the site's space: the page says so, and keeps nothing more", async (t) => {
  const MiB = 1024 * 1024
  const { app } = await buildTestApp(t, { config: { files: { fileBytes: MiB, siteBytes: MiB } } })
  const ann = await signedInPerson(app, { email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'Help.', supporterId: ann.user.id, via: 'api' })
  const path = '/demo/discussions/1'
  await ann.web.get(path)
  t.equal((await ann.web.postFiles(`${path}/reply`, { body: 'One scan.', internal: 'no', file: { name: 'one.bin', bytes: Buffer.alloc(700 * 1024, 1) } })).statusCode, 303)
  await ann.web.get(path)
  const over = await ann.web.postFiles(`${path}/reply`, { body: 'Another scan.', internal: 'no', file: { name: 'two.bin', bytes: Buffer.alloc(700 * 1024, 2) } })
  t.equal(over.statusCode, 413)
  t.match(over.body, /<h1>That was too large<\/h1>\s*<p>This site&#39;s files would pass its space of 1 MB: remove old discussions&#39; files or ask the operator for more\. Go back and choose fewer or smaller files\.<\/p>/)
  t.equal(await app.files.usage(ann.site.id), 700 * 1024, 'the first file alone')
  t.equal((await app.discussions.get(ann.site.id, 1)).commentsCount, 2, 'and no second reply was written')
})

t.test('customers and strangers reach no file; another site’s number is no file here', async (t) => {
  const { app, ann, path } = await discussionWithStaff(t)
  await ann.web.postFiles(`${path}/reply`, { body: 'A note.', internal: 'yes', file: { name: 'refund.txt', bytes: Buffer.from('approved') } })
  const [{ id }] = await app.files.ofDiscussion((await app.discussions.get(ann.site.id, 1)).id)
  const file = `/demo/files/${id}`

  const carol = await signedInPerson(app, { email: 'carol-customer@example.test', role: 'customer' })
  const asCustomer = await carol.web.get(file)
  t.equal(asCustomer.statusCode, 403, "a customer does not reach an internal note's file")
  t.notMatch(asCustomer.body, /approved/)
  await carol.web.get('/demo/profile')
  const posted = await carol.web.postFiles(`${path}/reply`, { body: 'me too', file: { name: 'c.txt', bytes: Buffer.from('customer') } })
  t.equal(posted.statusCode, 403, 'nor replies from the staff page')
  t.equal(await app.files.usage(ann.site.id), 'approved'.length, 'and the customer’s file was never read')

  const stranger = webClient(app)
  const signedOut = await stranger.get(file)
  t.equal(signedOut.statusCode, 303)
  t.match(signedOut.headers.location, /\/demo\/login/)

  const bob = await signedInPerson(app, { site: 'other', email: 'bob@example.test' })
  const elsewhere = await bob.web.get(`/other/files/${id}`)
  t.equal(elsewhere.statusCode, 404)
  t.match(elsewhere.body, /has no file with this number/)
  t.equal((await ann.web.get('/demo/files/abc')).statusCode, 404)
})
