import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import t from 'tap'
import { childEnv } from '../fixtures/child.ts'
import { BIN, bannerToken, freePort, startServer } from '../fixtures/server.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The receiver in the compiled service, as an operator starts it: `service-desk serve` with
// SERVICE_MAIL_RECEIVER, a mailbox added by the command line beside it, a mail sent to it. (Its
// libraries are loaded only when it is set up; this is where that load is seen to work.)

t.test('serve with SERVICE_MAIL_RECEIVER takes a mail for a mailbox added by the command line', async (t) => {
  const dir = t.testdir({})
  const db = join(dir, 'service.db')
  const port = await freePort()
  const server = await startServer(t, { SERVICE_DB: db, SERVICE_MAIL_RECEIVER: String(port) })
  const token = await bannerToken(server)
  t.match(server.output(), `"mailReceiver":{"host":"127.0.0.1","port":${port}}`)
  execFileSync(process.execPath, [BIN, 'mailbox', 'add', 'demo', 'support@demo.example', '--db', db], { env: childEnv() })
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true })
  t.teardown(() => transport.close())
  const sent = await transport.sendMail({ from: 'Carol <carol@customer.example>', to: 'support@demo.example', subject: 'From the outside', text: 'Hello.' })
  t.match(sent.response, /^250 .*Message taken/)
  const listing = await fetch(`${server.base}/demo/discussions`, { headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.service-v1+json' } }).then((res) => res.json() as Promise<{ discussions: Array<{ title: string; author_email: string }> }>)
  t.match(listing.discussions[0], { title: 'From the outside', author_email: 'carol@customer.example' })
})
