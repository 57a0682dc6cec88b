import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http'
import { createServer, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { rawRows } from '../fixtures/app.ts'
import { logCapture } from '../fixtures/log.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { GTUBE, haveRspamd, rspamd } from '../fixtures/rspamd.ts'
import { freePort } from '../fixtures/server.ts'
import { DEFAULT_FILE_LIMITS } from '../../lib/files.ts'
import { pipelineOf, takeMessage } from '../../plugins/mail/pipeline.ts'

// Engines: one: what it asks is the pipeline's talk with rspamd and what it makes of the answers;
// the spam state it leads to is the stores', asked on both engines by test/mail/spam.test.ts.
// Issue 65, spam: with SERVICE_RSPAMD_URL, a new discussion's mail that no sender rule and no
// provider's header decided goes to rspamd, and is spam when rspamd says reject, add header or
// rewrite subject. A real rspamd (test/fixtures/rspamd.ts) for the verdicts, the built-in receiver
// for the mail; and what rspamd can do to the service: be down, hang, answer nonsense. Each time
// the mail comes in as not spam, and the log says rspamd could not check it.

type Config = { mailRspamd: { url: string; timeoutMs: number } }

async function desk(t: Test, config: Config) {
  const log = logCapture()
  const made = await mailDesk(t, { logStream: log.stream, config })
  const state = async (n: number) => (await made.app.inject({ method: 'GET', url: `/demo/discussions/${n}`, headers: made.ann.bearer })).json().state as string
  const reasons = async () => (await rawRows(made.app, 'SELECT spam_reason FROM mail_messages ORDER BY id')).map((r) => r.spam_reason)
  const warnings = () => log.entries().filter((e) => e.msg === 'rspamd could not check a message: taken as not spam')
  return { ...made, state, reasons, warnings, log }
}

t.test("rspamd's reject makes a new discussion spam; a message it passes, a rule's verdict and a reply are not its to judge", async (t) => {
  if (!haveRspamd(t)) return
  const { url } = await rspamd(t)
  const { app, ann, send, state, reasons, warnings } = await desk(t, { mailRspamd: { url, timeoutMs: 10_000 } })
  await send({ subject: 'My printer', text: 'It is on fire.', messageId: '<printer@customer.example>' })
  await send({ subject: 'Cheap pills', text: `Buy now.\n${GTUBE}\n` })
  t.equal(await state(1), 'new', 'a message rspamd passes')
  t.equal(await state(2), 'spam', 'a message rspamd rejects')
  // A reply in a thread the team has is never judged: the GTUBE line in a customer's answer stays theirs.
  await send({ subject: 'Re: My printer', text: `Here is the log.\n${GTUBE}\n`, inReplyTo: '<printer@customer.example>' })
  t.match((await app.inject({ method: 'GET', url: '/demo/discussions/1', headers: ann.bearer })).json(), { state: 'new', comments_count: 2 })
  // The site's rule comes first: an allowed sender's mail is not spam whatever rspamd would say, a blocked one's is, for the rule's reason.
  await app.senders.set(ann.site.id, 'customer.example', 'allow')
  await app.senders.set(ann.site.id, 'spammer.example', 'block')
  await send({ subject: 'Allowed', text: GTUBE })
  await send({ from: 'offers@spammer.example', subject: 'Blocked', text: 'Nothing rspamd minds.' })
  t.equal(await state(3), 'new')
  t.equal(await state(4), 'spam')
  t.same(await reasons(), [null, 'rspamd said reject (score 15 of 15)', null, null, 'its sender is blocked on this site (spammer.example)'])
  t.same(warnings(), [])
})

/** An HTTP server in rspamd's place that answers what the test says, keeping what it was sent. */
async function fakeRspamd(t: Test, answer: (res: import('node:http').ServerResponse) => void) {
  const asked: Array<{ url: string; headers: IncomingHttpHeaders; body: string }> = []
  const server = createHttpServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      asked.push({ url: req.url!, headers: req.headers, body })
      answer(res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/rspamd/`, asked }
}

t.test("what the service tells rspamd of a message, and rspamd's other spam actions", async (t) => {
  const answers = [{ action: 'add header', score: 7.5, required_score: 15 }, { action: 'rewrite subject', score: 9 }, { action: 'greylist', score: 4.2 }, { action: 'soft reject', score: 1 }, { action: 'no action', score: -0.5 }, { action: 'no action', score: 0 }]
  let n = 0
  const fake = await fakeRspamd(t, (res) => res.setHeader('content-type', 'application/json').end(JSON.stringify(answers[n++])))
  const rspamdAt = { url: fake.url, timeoutMs: 10_000 }
  const { app, ann, send, state, reasons, warnings } = await desk(t, { mailRspamd: rspamdAt })
  await send({ from: 'Carol <carol@customer.example>', envelope: { from: 'bounces+x@customer.example', to: ['support@acme.example'] }, subject: 'One', text: 'The first.' })
  for (const subject of ['Two', 'Three', 'Four', 'Five']) await send({ subject, text: subject })
  t.same(await Promise.all([1, 2, 3, 4, 5].map(state)), ['spam', 'spam', 'new', 'new', 'new'], 'add header and rewrite subject are spam; greylist, soft reject and no action are not')
  t.same((await reasons()).slice(0, 2), ['rspamd said add header (score 7.5 of 15)', 'rspamd said rewrite subject (score 9)'])
  const first = fake.asked[0]!
  t.equal(first.url, '/rspamd/checkv2', "the check, under the address's path")
  t.match(first.headers, { from: 'bounces+x@customer.example', rcpt: 'support@acme.example', ip: '127.0.0.1', helo: 'mx.sender.example' }, "the envelope's sender, the mailbox, the connection")
  t.match(first.body, /^[\s\S]*Subject: One[\s\S]*The first\./, 'the message as it came')
  // IMAP's door knows no connection (the provider took the mail): rspamd gets the From's address alone.
  const [mailbox] = await app.mailboxes.listMailboxes(ann.site.id)
  const imap = pipelineOf(app, DEFAULT_FILE_LIMITS, { headers: true, rspamd: rspamdAt })
  t.match(await takeMessage(imap, mailbox!, Buffer.from('From: Dan <dan@customer.example>\r\nTo: support@acme.example\r\nSubject: Six\r\n\r\nBy IMAP.\r\n')), { kind: 'opened', number: 6 })
  t.match(fake.asked[5]!.headers, { from: 'dan@customer.example', rcpt: 'support@acme.example' })
  t.notOk('ip' in fake.asked[5]!.headers || 'helo' in fake.asked[5]!.headers)
  t.same(warnings(), [])
})

t.test('rspamd down, hanging, or answering what rspamd does not: the mail comes in as not spam and the log says why', async (t) => {
  // Nothing listens here.
  const down = await desk(t, { mailRspamd: { url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 10_000 } })
  await down.send({ subject: 'While rspamd is down', text: GTUBE })
  t.equal(await down.state(1), 'new')
  t.equal(down.warnings().length, 1)

  // A server that takes the connection and never answers: the check gives up at the timeout.
  const held: Socket[] = []
  const silent = createServer((socket) => void held.push(socket))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of held) socket.destroy()
    silent.close()
  })
  const hanging = await desk(t, { mailRspamd: { url: `http://127.0.0.1:${(silent.address() as { port: number }).port}`, timeoutMs: 300 } })
  await hanging.send({ subject: 'While rspamd hangs', text: 'x' })
  t.equal(await hanging.state(1), 'new')
  t.equal(hanging.warnings().length, 1)
  t.match(hanging.warnings()[0], { level: 40, err: { message: /timeout/i } })

  // Not rspamd: a page, then JSON without a verdict, then an error.
  const replies: Array<(res: import('node:http').ServerResponse) => void> = [
    (res) => res.setHeader('content-type', 'text/html').end('<html>Welcome to nginx</html>'),
    (res) => res.setHeader('content-type', 'application/json').end('{"action": 15}'),
    (res) => res.writeHead(500).end('oops'),
    (res) => res.setHeader('content-type', 'application/json').end('null'),
  ]
  const fake = await fakeRspamd(t, (res) => replies.shift()!(res))
  const odd = await desk(t, { mailRspamd: { url: fake.url, timeoutMs: 10_000 } })
  for (const subject of ['A page', 'No verdict', 'An error', 'Null']) await odd.send({ subject, text: GTUBE })
  t.same(await Promise.all([1, 2, 3, 4].map(odd.state)), ['new', 'new', 'new', 'new'])
  t.equal(odd.warnings().length, 4)
  t.match(odd.warnings(), [{ err: { type: 'SyntaxError' } }, { err: { message: 'rspamd answered without an action and a score' } }, { err: { message: 'rspamd answered 500' } }, { err: { message: 'rspamd answered without an action and a score' } }])
  t.notMatch(odd.log.text(), /Buy now|XJS\*C4JDBQADN1/, "the log names the failure, not the customer's words")
})
