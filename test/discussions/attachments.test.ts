import { createHash } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import t from 'tap'
import { basic, supporterWithPassword } from '../fixtures/credentials.ts'
import { newTestApp, supporterWithToken } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import fileSweep from '../../plugins/file-sweep.ts'
import { PNG, form, type FormValue } from '../fixtures/files.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).

const MiB = 1024 * 1024
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

type Api = Awaited<ReturnType<typeof discussionApp>>

/** Sends a multipart form as the supporter of `api`. */
async function post(fixture: Api, url: string, fields: Record<string, FormValue>, headers: Record<string, string> = fixture.ann.bearer) {
  const body = await form(fields)
  return fixture.app.inject({ method: 'POST', url, headers: { ...headers, 'content-type': body.type }, payload: body.payload })
}

async function upload(fixture: Api, name: string, bytes: Buffer, headers?: Record<string, string>) {
  const res = await post(fixture, '/demo/uploads', { file: { name, bytes } }, headers)
  if (res.statusCode !== 201) throw new Error(`upload failed: ${res.statusCode} ${res.body}`)
  return res.json().uploads[0] as { id: number; href: string; name: string; size: number; content_type: string; expires_at: string }
}

t.test('upload, carry on a reply, list, download byte-equal, with a tag that never changes', async (t) => {
  const fixture = await discussionApp(t)
  const { ann, api, create } = fixture
  await create()
  const log = Buffer.from('2026-03-01 12:00:00 error: the invoice total is wrong\n'.repeat(20_000))
  t.ok(log.length > 600 * 1024, 'more than two pieces')

  const up = await upload(fixture, 'server.log', log)
  t.match(up, { href: `https://api.example.test/demo/attachments/${up.id}`, name: 'server.log', size: log.length, content_type: 'text/plain', expires_at: '2026-03-02T12:00:00Z' })

  const reply = await api('POST', '/demo/discussions/1/comments', { body: 'The log you asked for.', uploads: [up.id] })
  t.equal(reply.statusCode, 201)
  t.same(reply.json().attachments, [{ id: up.id, href: up.href, name: 'server.log', size: log.length, content_type: 'text/plain' }])

  const shown = (await api('GET', '/demo/discussions/1')).json()
  t.same(shown.comments.map((c: { attachments: unknown[] }) => c.attachments.length), [0, 1], 'the discussion lists it on its comment')
  t.same((await api('GET', '/demo/discussions/1/comments')).json().comments[1].attachments[0].id, up.id, 'and its comments page')
  t.same((await api('GET', '/demo/discussions/1/comments/2')).json().attachments[0].id, up.id, 'and the comment')

  const got = await api('GET', `/demo/attachments/${up.id}`)
  t.equal(got.statusCode, 200)
  t.ok(got.rawPayload.equals(log), 'byte for byte')
  t.equal(got.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(got.headers['content-length'], String(log.length))
  t.equal(got.headers['content-disposition'], 'attachment; filename="server.log"')
  t.equal(got.headers['x-content-type-options'], 'nosniff')
  t.equal(got.headers['content-security-policy'], "sandbox; default-src 'none'")
  t.equal(got.headers['cache-control'], 'private, no-store', 'private, as every answer of the API, and never kept by a shared cache')
  t.equal(got.headers.etag, `"${sha256(log)}"`, 'the tag is the digest of the bytes')

  const again = await api('GET', `/demo/attachments/${up.id}`, undefined, { ...ann.bearer, 'if-none-match': got.headers.etag as string })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')

  const head = await api('HEAD', `/demo/attachments/${up.id}`)
  t.equal(head.statusCode, 200)
  t.equal(head.headers['content-length'], String(log.length), 'HEAD says the size')
  t.equal(head.body, '')

  // An empty file is a file: no pieces, nothing to send.
  const empty = await upload(fixture, 'empty.txt', Buffer.alloc(0))
  const none = await api('GET', `/demo/attachments/${empty.id}`)
  t.same([none.statusCode, none.headers['content-length'], none.body], [200, '0', ''])

  // A download takes any Accept: a browser's, or a client asking for the file's own type.
  t.equal((await api('GET', `/demo/attachments/${up.id}`, undefined, { authorization: ann.bearer.authorization, accept: 'text/plain' })).statusCode, 200)
  t.equal((await api('GET', `/demo/attachments/${up.id}`, undefined, { authorization: ann.bearer.authorization })).statusCode, 200)
})

t.test('the same file twice is stored once; the space it takes is counted once', async (t) => {
  const fixture = await discussionApp(t)
  const { app, ann } = fixture
  const bytes = Buffer.alloc(300 * 1024, 7)
  const first = await upload(fixture, 'a.bin', bytes)
  const used = await app.files.usage(ann.site.id)
  t.equal(used, bytes.length)
  const second = await upload(fixture, 'copy of a.bin', bytes)
  t.not(first.id, second.id, 'two attachments')
  t.equal(await app.files.usage(ann.site.id), used, 'one file')
  const [a, b] = [await app.files.find(ann.site.id, first.id), await app.files.find(ann.site.id, second.id)]
  t.equal(a!.fileId, b!.fileId, 'both name the same file')
  t.equal(b!.name, 'copy of a.bin', 'each keeps its own name')
})

t.test('the type comes from the bytes; only images named as what they are are shown inline', onSqlite('what the bytes are and the headers they are served with'), async (t) => {
  const fixture = await discussionApp(t)
  const { api } = fixture
  const html = Buffer.from('<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>')
  const cases = [
    { name: 'setup.exe', bytes: PNG, type: 'image/png', disposition: 'attachment; filename="setup.exe"' },
    { name: 'cat.png', bytes: html, type: 'text/html', disposition: 'attachment; filename="cat.png"' },
    { name: 'cat.png', bytes: PNG, type: 'image/png', disposition: 'inline; filename="cat.png"' },
    { name: 'logo.svg', bytes: Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>1</script></svg>'), type: 'image/svg+xml', disposition: 'attachment; filename="logo.svg"' },
    { name: 'data.bin', bytes: Buffer.from([0, 1, 2, 3, 255, 254]), type: 'application/octet-stream', disposition: 'attachment; filename="data.bin"' },
  ]
  for (const c of cases) {
    const up = await upload(fixture, c.name, c.bytes)
    t.equal(up.content_type, c.type, `${c.name}: ${c.type}`)
    const got = await api('GET', `/demo/attachments/${up.id}`)
    t.match(got.headers['content-type'], c.type)
    t.equal(got.headers['content-disposition'], c.disposition)
    t.equal(got.headers['x-content-type-options'], 'nosniff')
    t.match(got.headers['content-security-policy'], /^sandbox/)
  }
  // The type the client declared is not taken either.
  const declared = await post(fixture, '/demo/uploads', { file: { name: 'x.png', bytes: html, type: 'image/png' } })
  t.equal(declared.json().uploads[0].content_type, 'text/html')
})

t.test('names are cleaned; a name out of plain ASCII goes out as filename*', async (t) => {
  const fixture = await discussionApp(t)
  const up = await upload(fixture, '../../etc/\u202egnp.exe\u0007 Résumé final.pdf', Buffer.from('%PDF-1.4\n'))
  t.equal(up.name, 'gnp.exe Résumé final.pdf')
  const got = await fixture.api('GET', `/demo/attachments/${up.id}`)
  t.equal(got.headers['content-disposition'], `attachment; filename="gnp.exe R_sum_ final.pdf"; filename*=UTF-8''gnp.exe%20R%C3%A9sum%C3%A9%20final.pdf`)
})

t.test('a comment with its files in one multipart request', async (t) => {
  const fixture = await discussionApp(t)
  const { app, ann, create, questions } = fixture
  await create()
  const res = await post(fixture, '/demo/discussions/1/comments', {
    body: 'Two files, and a note among us.',
    internal: 'true',
    file: [
      { name: 'shot.png', bytes: PNG },
      { name: 'notes.txt', bytes: Buffer.from('remember the refund') },
    ],
  })
  t.equal(res.statusCode, 201)
  t.match(res.json(), { body: 'Two files, and a note among us.', internal: true })
  t.same(res.json().attachments.map((a: { name: string }) => a.name), ['shot.png', 'notes.txt'])

  // A discussion opened with a file, and an upload made before, together.
  const before = await upload(fixture, 'earlier.txt', Buffer.from('made first'))
  const opened = await post(fixture, `/demo/categories/${questions.id}/discussions`, {
    title: 'Opened with a file',
    body: 'See attached.',
    public: 'false',
    uploads: String(before.id),
    file: { name: 'invoice.pdf', bytes: Buffer.from('%PDF-1.7\n') },
  })
  t.equal(opened.statusCode, 201)
  t.equal(opened.json().public, false)
  t.same(opened.json().comments[0].attachments.map((a: { name: string; content_type: string }) => [a.name, a.content_type]), [['earlier.txt', 'text/plain'], ['invoice.pdf', 'application/pdf']])

  // A request refused after its files were read keeps none of them.
  const usage = await app.files.usage(ann.site.id)
  const blank = await post(fixture, '/demo/discussions/1/comments', { body: '   ', file: { name: 'big.bin', bytes: Buffer.alloc(100_000, 1) } })
  t.equal(blank.statusCode, 400)
  t.match(blank.json().fields, [{ field: 'body' }])
  t.equal(await app.files.usage(ann.site.id), usage, 'the refused request kept no file')
  const twice = await post(fixture, '/demo/discussions/1/comments', { body: ['one', 'two'] as unknown as string, uploads: 'first', file: { name: 'd.bin', bytes: Buffer.alloc(10, 3) } })
  t.equal(twice.statusCode, 400)
  t.match(twice.json().fields, [{ field: 'body', problem: 'must be a string' }, { field: 'uploads.0' }], 'a field sent twice is a list, an upload that is no number is refused')
  t.equal(await app.files.usage(ann.site.id), usage)
  const wrongType = await post(fixture, '/demo/discussions/1/comments', { body: 'ok', internal: 'maybe', file: { name: 'c.bin', bytes: Buffer.alloc(10, 2) } })
  t.equal(wrongType.statusCode, 400)
  t.match(wrongType.json().fields, [{ field: 'internal' }])
  t.equal(await app.files.usage(ann.site.id), usage)

  // A field named to pollute the body's prototype is refused by the reader, before any file.
  for (const name of ['__proto__', 'constructor']) {
    const polluting = await post(fixture, '/demo/discussions/1/comments', { body: 'ok', [name]: 'x', file: { name: 'e.bin', bytes: Buffer.alloc(10, 4) } })
    t.equal(polluting.statusCode, 400, name)
  }
  t.equal(await app.files.usage(ann.site.id), usage)

  // Multipart is for posts only.
  const put = await app.inject({ method: 'PUT', url: '/demo/discussions/1', headers: { ...ann.bearer, 'content-type': (await form({ title: 'x' })).type }, payload: (await form({ title: 'x' })).payload })
  t.equal(put.statusCode, 415)
  t.equal((await fixture.api('POST', '/demo/uploads', { file: 'not multipart' })).statusCode, 415, 'uploads are multipart only')
  const none = await post(fixture, '/demo/uploads', { note: 'no file here' })
  t.equal(none.statusCode, 400)
  t.match(none.json().fields, [{ field: 'file' }])
  const nameless = await post(fixture, '/demo/uploads', { file: { name: '', bytes: Buffer.from('an empty file input') } })
  t.equal(nameless.statusCode, 400, 'a part without a filename is no file (a form sends its empty file input so)')
})

t.test('uploads are the uploader’s, used once, for a day, at most ten and 25 MB a message', async (t) => {
  const fixture = await discussionApp(t)
  const { app, ann, api, clock, create } = fixture
  await create()
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const mine = await upload(fixture, 'mine.txt', Buffer.from('ann’s'))
  const bobs = await upload(fixture, 'bobs.txt', Buffer.from('bob’s'), bob.bearer)

  // Bob cannot see or use Ann's upload, nor Ann his, while no comment carries them.
  t.equal((await api('GET', `/demo/attachments/${mine.id}`, undefined, bob.bearer)).statusCode, 404)
  const taken = await api('POST', '/demo/discussions/1/comments', { body: 'x', uploads: [bobs.id] })
  t.equal(taken.statusCode, 400)
  t.match(taken.json().fields, [{ field: 'uploads', problem: new RegExp(`names ${bobs.id}, which is not an upload of yours`) }])
  t.equal((await api('GET', '/demo/discussions/1')).json().comments_count, 1, 'and the refused reply was not written')

  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'x', uploads: [mine.id] })).statusCode, 201)
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'y', uploads: [mine.id] })).statusCode, 400, 'used once')
  t.equal((await api('GET', `/demo/attachments/${mine.id}`, undefined, bob.bearer)).statusCode, 200, 'on a comment, every supporter of the site reads it')

  const late = await upload(fixture, 'late.txt', Buffer.from('late'))
  clock.advance(24 * 60 * 60 * 1000 + 1)
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'z', uploads: [late.id] })).statusCode, 400, 'expired after a day')
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'z', uploads: [2 ** 40] })).statusCode, 400, 'an id past any row')

  const eleven = await api('POST', '/demo/discussions/1/comments', { body: 'z', uploads: Array.from({ length: 11 }, (_, i) => i + 1) })
  t.equal(eleven.statusCode, 400)
  t.match(eleven.json().fields, [{ field: 'uploads' }])
  // Named uploads and a form's files together are counted together, by the store.
  const ten = await Promise.all(Array.from({ length: 10 }, (_, i) => upload(fixture, `${i}.txt`, Buffer.from(`small ${i}`))))
  const overCount = await post(fixture, '/demo/discussions/1/comments', { body: 'z', uploads: ten.map((u) => String(u.id)) as unknown as string, file: { name: 'eleventh.txt', bytes: Buffer.from('one more') } })
  t.equal(overCount.statusCode, 400)
  t.match(overCount.json(), { message: 'Invalid request: uploads must not have more than 10 items.' })
  // The store holds to it whoever calls (the pages, mail to come).
  const eleventh = await upload(fixture, 'eleventh.txt', Buffer.from('one more'))
  await t.rejects(app.discussions.reply({ siteId: ann.site.id, number: 1, body: 'z', internal: false, supporterId: ann.user.id, via: 'api', uploads: [...ten, eleventh].map((u) => u.id) }), { message: 'a message carries at most 10 files', field: 'uploads' })
  const two = await api('POST', '/demo/discussions/1/comments', { body: 'z', uploads: [9998, 9999] })
  t.match(two.json().fields, [{ field: 'uploads', problem: 'names 9998, 9999, which are not uploads of yours on this site waiting for a message (an upload is kept a day, and used once)' }])
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'no files', uploads: [] })).statusCode, 201, 'an empty list is no files')
  const tooMany = await post(fixture, '/demo/uploads', { file: Array.from({ length: 11 }, (_, i) => ({ name: `${i}.txt`, bytes: Buffer.from(`file ${i}`) })) })
  t.equal(tooMany.statusCode, 413, 'eleven files in one request')

  const big = await Promise.all([0, 1, 2].map((n) => upload(fixture, `${n}.bin`, Buffer.alloc(9 * MiB, n + 1))))
  const heavy = await api('POST', '/demo/discussions/1/comments', { body: 'three big ones', uploads: big.map((b) => b.id) })
  t.equal(heavy.statusCode, 413)
  t.match(heavy.json(), { error: 'too_large', message: 'A message carries at most 25 MB of files.' })
})

t.test('limits: a file over the limit and a full site are refused, and nothing is kept', async (t) => {
  const fixture = await discussionApp(t, { config: { files: { fileBytes: 1 * MiB, siteBytes: 2 * MiB } } })
  const { app, ann } = fixture
  const over = await post(fixture, '/demo/uploads', { file: { name: 'big.bin', bytes: Buffer.alloc(MiB + 1, 3) } })
  t.equal(over.statusCode, 413)
  t.match(over.json(), { error: 'too_large', message: 'A file may hold at most 1 MB.' })
  t.equal(await app.files.usage(ann.site.id), 0)
  t.same(await app.files.sweep(), { uploads: 0, files: 0 }, 'nothing was left half-written')

  await upload(fixture, 'one.bin', Buffer.alloc(MiB, 4))
  await upload(fixture, 'two.bin', Buffer.alloc(MiB - 10, 5))
  const full = await post(fixture, '/demo/uploads', { file: { name: 'three.bin', bytes: Buffer.alloc(100, 6) } })
  t.equal(full.statusCode, 413)
  t.match(full.json().message, /this site's files would pass its space of 2 MB/i)
  t.equal((await post(fixture, '/demo/uploads', { file: { name: 'again.bin', bytes: Buffer.alloc(MiB, 4) } })).statusCode, 201, 'a file the site has takes no more space')
  const usage = await app.files.usage(ann.site.id)
  t.equal(usage, 2 * MiB - 10)
  const filled = await post(fixture, '/demo/uploads', { file: { name: 'x.bin', bytes: Buffer.alloc(20, 7) } })
  t.equal(filled.statusCode, 413, 'passing the space half-way through a file')
  t.equal(await app.files.usage(ann.site.id), usage)
})

t.test('a file over the limit is refused before it is read whole', onSqlite("a request's body refused as it streams"), async (t) => {
  const fixture = await discussionApp(t, { config: { files: { fileBytes: 2 * MiB, siteBytes: 100 * MiB } } })
  const { app, ann } = fixture
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const boundary = 'x-boundary-7d2f'
  const total = 64 * MiB
  globalThis.gc?.()
  const before = process.memoryUsage()
  let peak = 0
  const watch = setInterval(() => {
    const now = process.memoryUsage()
    peak = Math.max(peak, now.heapUsed + now.arrayBuffers - before.heapUsed - before.arrayBuffers)
  }, 5)
  let sent = 0
  const status = await new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/demo/uploads', headers: { ...ann.bearer, 'content-type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
      resolve(res.statusCode!)
      req.destroy()
    })
    req.on('error', (error) => (sent > 0 ? undefined : reject(error)))
    req.write(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="huge.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`)
    const chunk = Buffer.alloc(64 * 1024, 9)
    const pump = () => {
      while (sent < total && !req.destroyed) {
        sent += chunk.length
        if (!req.write(chunk)) return void req.once('drain', pump)
      }
      req.end(`\r\n--${boundary}--\r\n`)
    }
    pump()
  })
  clearInterval(watch)
  t.equal(status, 413)
  t.ok(sent < total, `the answer came before the whole request was sent (${(sent / MiB).toFixed(1)} of 64 MiB)`)
  t.ok(peak < 24 * MiB, `memory grew by at most ${(peak / MiB).toFixed(1)} MiB for a 64 MiB request`)
  t.equal(await app.files.usage(ann.site.id), 0, 'and nothing was kept')
})

t.test('who reaches a file: another site, a customer, an internal note', async (t) => {
  const fixture = await discussionApp(t)
  const { app, api, create } = fixture
  await create()
  const note = await post(fixture, '/demo/discussions/1/comments', { body: 'for the staff', internal: 'true', file: { name: 'refund.txt', bytes: Buffer.from('approved') } })
  const id = note.json().attachments[0].id
  const other = await supporterWithToken(app, { site: 'other' })
  const elsewhere = await api('GET', `/other/attachments/${id}`, undefined, other.bearer)
  t.equal(elsewhere.statusCode, 404, "another site's supporter: as if there were none")
  t.match(elsewhere.json(), { error: 'not_found', message: `There is no attachment ${id} on this site.` })
  t.equal((await api('GET', `/demo/attachments/${id}`, undefined, other.bearer)).statusCode, 401, "another site's token on this site")
  const customer = await supporterWithPassword(app, { email: 'carol@example.test', password: 'correct horse battery', staff: false })
  const asCustomer = await api('GET', `/demo/attachments/${id}`, undefined, { authorization: basic('carol@example.test', 'correct horse battery').authorization, accept: 'application/json' })
  t.equal(asCustomer.statusCode, 403, 'a customer of the site does not reach the file of an internal note')
  t.not(asCustomer.body.includes('approved'), true)
  t.equal((await api('GET', '/demo/attachments/99999')).statusCode, 404)
  t.equal((await api('GET', '/demo/attachments/abc')).statusCode, 400)
  void customer
})

t.test('the sweep removes expired uploads, unused files and what an interrupted upload left', async (t) => {
  const fixture = await discussionApp(t)
  const { app, ann, clock, create, api } = fixture
  await create()
  const kept = await upload(fixture, 'kept.txt', Buffer.from('on a comment'))
  await api('POST', '/demo/discussions/1/comments', { body: 'x', uploads: [kept.id] })
  await upload(fixture, 'forgotten.txt', Buffer.from('never used'))
  const broken = await app.files.begin(ann.site.id)
  await app.files.writePiece(broken, 0, Buffer.from('half'))
  t.same(await app.files.sweep(), { uploads: 0, files: 0 }, 'nothing is due yet')
  clock.advance(6 * 60 * 60 * 1000 + 1)
  t.same(await app.files.sweep(), { uploads: 0, files: 1 }, 'the interrupted upload, after six hours')
  clock.advance(18 * 60 * 60 * 1000)
  t.same(await app.files.sweep(), { uploads: 1, files: 1 }, 'the upload no comment took, and its file, after a day')
  t.equal((await api('GET', `/demo/attachments/${kept.id}`)).statusCode, 200, 'the comment keeps its file')
  t.equal(await app.files.usage(ann.site.id), 'on a comment'.length)
  t.equal(await app.files.piece(broken, 0), undefined, "the interrupted upload's pieces went with it")
})

t.test('the sweep runs in the background: it says what it removed, and a sweep that fails is logged', async (t) => {
  const lines: string[] = []
  const { app, clock } = await newTestApp(t, { logStream: { write: (line) => void lines.push(line) } })
  await app.register(async (scope) => {
    await scope.register(fileSweep, { firstAfterMs: 1, everyMs: 5 })
  })
  await app.ready()
  const site = await app.sites.add('demo', 'Demo')
  const ann = await app.users.insert({ email: 'ann@example.test' }, null)
  const { saveFile } = await import('../../db/stores/files.ts')
  await saveFile(app.files, { siteId: site.id, uploaderId: ann.id, name: 'left.txt' }, [Buffer.from('never used')], { fileBytes: MiB, siteBytes: MiB })
  clock.advance(24 * 60 * 60 * 1000 + 1)
  const logged = async (text: string) => {
    for (let i = 0; i < 200 && !lines.some((l) => l.includes(text)); i++) await new Promise((r) => setTimeout(r, 10))
    return lines.find((l) => l.includes(text))
  }
  t.match(await logged('unused uploads and files removed'), '"files":{"uploads":1,"files":1}')
  t.equal(await app.files.usage(site.id), 0)
  app.files.sweep = async () => {
    throw new Error('disk on fire')
  }
  t.match(await logged('could not remove unused uploads and files'), 'disk on fire')
})
