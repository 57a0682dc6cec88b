import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'


// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The sites' webhooks on the command line (cli/webhooks.ts), on the engine the suite runs on. That
// what it queues is posted is the running service's part (test/webhooks/*).

t.test('webhook add, list, switch, rotate, test and remove; bad input is refused with nothing written', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['site', 'add', 'other'])).code, 0)

  const added = await cli.run(['webhook', 'add', 'acme', 'https://hooks.example.com/desk', '--events', 'discussion.created,comment.created', '--description', 'Chat'])
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^webhook 1 of acme posts discussion\.created, comment\.created to https:\/\/hooks\.example\.com\/desk\nits signing secret, shown this once: whsec_[A-Za-z0-9+/]{32}\n$/)
  t.equal((await cli.run(['webhook', 'add', 'acme', 'https://all.example.com/', '--events', 'all', '--internal-comments'])).code, 0)
  t.equal(
    (await cli.run(['webhook', 'list', 'acme'])).stdout,
    '1\thttps://hooks.example.com/desk\tdiscussion.created,comment.created\ton\t-\tChat\n' +
      '2\thttps://all.example.com/\tdiscussion.created,discussion.updated,discussion.deleted,discussion.restored,discussion.spam,discussion.merged,comment.created,sla.warning,sla.breached,satisfaction.rated,rule.fired,token.created,token.revoked,token.leaked,application.authorized,customer.erased\ton\t-\t-\n',
  )
  t.equal((await cli.run(['webhook', 'list', 'other'])).stdout, '', "another site's list is its own")

  t.match((await cli.run(['webhook', 'switch', 'acme', '1', 'off'])).stdout, /^1\thttps:\/\/hooks\.example\.com\/desk\t.*\toff\t/)
  t.match((await cli.run(['webhook', 'switch', 'acme', '1', 'on'])).stdout, /\ton\t/)
  const rotated = await cli.run(['webhook', 'rotate', 'acme', '1'])
  t.match(rotated.stdout, /^webhook 1: its new signing secret, shown this once: whsec_\S+\nthe old one signs beside it for a day\n$/)
  t.not(/whsec_\S+/.exec(rotated.stdout)![0], /whsec_\S+/.exec(added.stdout)![0])
  t.match((await cli.run(['webhook', 'test', 'acme', '1'])).stdout, /^test event msg_[\w-]{22} queued for https:\/\/hooks\.example\.com\/desk\n$/)
  const [queued] = await cli.query<{ kind: string; payload: string }>("SELECT kind, payload FROM outbox WHERE kind = 'webhook'")
  t.match(JSON.parse(queued!.payload), { type: 'webhook.test', data: { webhook: { id: 1, url: 'https://hooks.example.com/desk', enabled: true, href: 'http://localhost:3000/acme/webhooks/1' } } }, 'the endpoint as the API shows it')

  for (const [args, words] of [
    [['webhook', 'add', 'acme', 'https://x.example.com/'], '--events is needed'],
    [['webhook', 'add', 'acme', 'https://x.example.com/', '--events', 'discussion.eaten'], 'names "discussion.eaten", which is not an event'],
    [['webhook', 'add', 'acme', 'https://x.example.com/', '--events', 'discussion.eaten,comment.lost'], 'names "discussion.eaten", "comment.lost", which are not events'],
    [['webhook', 'add', 'acme', 'http://127.0.0.1:8080/', '--events', 'all'], 'the address is refused: 127.0.0.1 is a loopback address'],
    [['webhook', 'add', 'acme', 'http://169.254.169.254/', '--events', 'all'], 'the address is refused: 169.254.169.254 is a link-local address'],
    [['webhook', 'add', 'acme', 'ftp://x.example.com/', '--events', 'all'], 'must start with https://'],
    [['webhook', 'switch', 'acme', '1', 'maybe'], 'say on or off, not "maybe"'],
    [['webhook', 'rotate', 'acme', 'one'], 'a webhook id is a number, not "one"'],
    [['webhook', 'remove', 'other', '1'], 'this site has no webhook 1'],
    [['webhook', 'remove', 'acme', '99'], 'this site has no webhook 99'],
  ] as const) {
    const refused = await cli.run([...args])
    t.not(refused.code, 0, args.join(' '))
    t.match(refused.stderr, words, args.join(' '))
  }
  // The operator's allowance lets an internal address in, as it does for the server.
  t.equal((await cli.run(['webhook', 'add', 'acme', 'http://10.1.2.3/hook', '--events', 'all'], { env: { SERVICE_WEBHOOK_ALLOW: '10.0.0.0/8' } })).code, 0)
  t.equal((await cli.query('SELECT id FROM webhooks')).length, 3, 'nothing written by the refusals')

  // Switched off by the service after failing for days: the list says why.
  const since = cli.engine === 'postgres' ? "'2026-03-01T12:00:00Z'" : String(Date.parse('2026-03-01T12:00:00Z'))
  await cli.write(`UPDATE webhooks SET enabled = false, disabled_reason = 'every delivery since 2026-03-01T12:00:00.000Z failed', failing_since = ${since} WHERE id = 2`)
  t.match((await cli.run(['webhook', 'list', 'acme'])).stdout, /\n2\thttps:\/\/all\.example\.com\/\t.*\toff \(every delivery since 2026-03-01T12:00:00\.000Z failed\)\tfailing since 2026-03-01T12:00:00\.000Z\t/)
  t.equal((await cli.run(['webhook', 'remove', 'acme', '1'])).stdout, 'webhook 1 removed from acme\n')
  t.equal((await cli.query("SELECT id FROM outbox WHERE kind = 'webhook'")).length, 0, 'its queued events went with it')
})

t.test('a token revoked on the command line is told to the site’s webhooks, as the server tells it', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['webhook', 'add', 'acme', 'https://hooks.example.com/desk', '--events', 'token.created,token.revoked'])).code, 0)
  t.equal((await cli.run(['user', 'add', 'ann@example.test'])).code, 0)
  t.equal((await cli.run(['staff', 'add', 'acme', 'ann@example.test'])).code, 0)
  const made = await cli.run(['token', 'create', 'acme', 'ann@example.test', '--name', 'deploy'])
  t.equal(made.code, 0, made.stderr)
  const [{ id }] = await cli.query<{ id: number }>('SELECT id FROM personal_tokens')
  t.equal((await cli.run(['token', 'revoke', 'acme', String(id)])).code, 0)
  const rows = await cli.query<{ payload: string }>("SELECT payload FROM outbox WHERE kind = 'webhook' ORDER BY id")
  t.match(rows.map((row) => JSON.parse(row.payload)), [
    { type: 'token.created', data: { id: `pat-${id}`, kind: 'personal_token', owner: 'ann@example.test', name: 'deploy', state: 'active' } },
    { type: 'token.revoked', data: { id: `pat-${id}`, state: 'revoked' } },
  ])
})
