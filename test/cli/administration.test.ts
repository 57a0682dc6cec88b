import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'
import { mailServer, readMail } from '../fixtures/mail.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Issue 34: the operator's side of site administration (cli/administration.ts), on the suite's
// engine: administrators, the credentials inventory, the token policy with its dry run and mails.

t.test('administrators, the inventory and the policy from the command line', async (t) => {
  const { run, clock } = await cliRunner(t)
  const smtp = await mailServer(t)
  const mail = { SERVICE_SMTP_URL: smtp.url }
  const ok = async (argv: string[], options: { env?: Record<string, string> } = {}) => {
    const result = await run(argv, options)
    t.equal(result.code, 0, `${argv.join(' ')}: ${result.stderr}`)
    return result
  }
  await ok(['site', 'add', 'acme'])
  await ok(['site', 'add', 'other'])
  for (const email of ['ann@example.test', 'bob@example.test', 'cus@example.test']) await ok(['user', 'add', email])
  t.equal((await ok(['staff', 'add', 'acme', 'ann@example.test', '--admin'])).stdout, 'ann@example.test is now support staff and an administrator of acme\n')
  await ok(['staff', 'add', 'acme', 'bob@example.test'])
  await ok(['staff', 'add', 'other', 'cus@example.test'])
  t.same(await run(['staff', 'admin', 'acme', 'cus@example.test']), { code: 1, stdout: '', stderr: 'service-desk: only support staff of the site can be its administrators; add them to the staff first\n' })
  t.equal((await ok(['staff', 'admin', 'acme', 'ann@example.test'])).stdout, 'ann@example.test is already an administrator of acme\n')
  t.equal((await ok(['staff', 'admin', 'acme', 'bob@example.test'])).stdout, 'bob@example.test is now an administrator of acme\n')
  t.equal((await ok(['staff', 'unadmin', 'acme', 'bob@example.test'])).stdout, 'bob@example.test is no longer an administrator of acme\n')
  t.equal((await ok(['staff', 'unadmin', 'acme', 'bob@example.test'])).stdout, 'bob@example.test is not an administrator of acme\n')

  const ann = (await ok(['token', 'create', 'acme', 'ann@example.test', '--name', 'Nightly export', '--access', 'write', '--expires', '365'])).stdout.trim()
  await ok(['token', 'create', 'acme', 'bob@example.test', '--name', 'CI', '--access', 'read', '--expires', '7'])
  await ok(['token', 'create', 'other', 'cus@example.test', '--name', 'elsewhere'])

  const lines = (await ok(['credentials', 'acme', '--kind', 'personal_token', '--sort', 'owner'])).stdout.trim().split('\n')
  t.same(lines.map((line) => line.split('\t').slice(1, 4)), [['ann@example.test', 'personal_token', 'Nightly export'], ['bob@example.test', 'personal_token', 'CI']])
  t.match(lines[1], /\tread\tcreated \d{4}-\d\d-\d\d\tlast used -\texpires \d{4}-\d\d-\d\d\tactive$/)
  t.same((await ok(['credentials', 'acme', '--kind', 'personal_token', '--sort', 'owner', '--desc'])).stdout.trim().split('\n').map((line) => line.split('\t')[1]), ['bob@example.test', 'ann@example.test'])
  const listed = JSON.parse((await ok(['credentials', 'acme', '--json'])).stdout) as Array<{ id: string; kind: string; owner: string }>
  t.same(listed.map((c) => c.kind).sort(), ['legacy_token', 'legacy_token', 'personal_token', 'personal_token'], "both tokens and the staff's legacy tokens; not the other site's")
  t.same(JSON.parse((await ok(['credentials', 'acme', '--json', '--owner', 'BOB', '--expires-within', '8'])).stdout).map((c: { owner: string }) => c.owner), ['bob@example.test'])
  t.same(JSON.parse((await ok(['credentials', 'acme', '--json', '--unused-days', '0', '--access', 'write', '--kind', 'personal_token'])).stdout).length, 1)
  for (const [option, value] of [['--kind', 'admin'], ['--access', 'all'], ['--sort', 'password'], ['--unused-days', 'x'], ['--expires-within', '1e3']]) {
    const refused = await run(['credentials', 'acme', option, value])
    t.equal(refused.code, 2, `${option} ${value}`)
    t.equal(refused.stderr, `service-desk: ${option} does not take "${value}"; see service-desk credentials --help\n`)
  }

  t.equal((await ok(['site', 'policy', 'acme'])).stdout, 'max_token_days\t365\nwrite_tokens\teveryone\nlegacy_token\ton\nmultipass\ton\npassword\ton\nstaff_second_factor\toff\nvisitor_discussions\ton\npublic_discussions\ton\nnew_discussions_to_team\ton\nsatisfaction\ton\ncompany_sign_in_only\toff\n')
  for (const [argv, message] of [
    [['--max-token-days', '400'], '--max-token-days must be a whole number of days from 1 to 365, not "400"'],
    [['--max-token-days', '0'], '--max-token-days must be a whole number of days from 1 to 365, not "0"'],
    [['--write-tokens', 'nobody'], '--write-tokens must be everyone or administrators, not "nobody"'],
    [['--password', 'maybe'], '--password must be on or off, not "maybe"'],
    [['--max-token-days', '30', '--shorten', '--leave'], '--shorten and --leave cannot be combined'],
    [['--max-token-days', '30'], '1 active token of 1 person lasts longer than 30 days: say whether to shorten them to the new limit or leave them as they are (--shorten or --leave)'],
  ] as const) {
    const refused = await run(['site', 'policy', 'acme', ...argv])
    t.same(refused, { code: 2, stdout: '', stderr: `service-desk: ${message}\n` }, argv.join(' '))
  }
  t.equal((await ok(['site', 'policy', 'acme'])).stdout.split('\n')[0], 'max_token_days\t365', 'nothing changed by the refusals')

  const left = await ok(['site', 'policy', 'acme', '--max-token-days', '90', '--leave', '--legacy-token', 'off', '--write-tokens', 'administrators', '--staff-second-factor', 'on'], { env: mail })
  t.equal(left.stdout, 'max_token_days\t90\nwrite_tokens\tadministrators\nlegacy_token\toff\nmultipass\ton\npassword\ton\nstaff_second_factor\ton\nvisitor_discussions\ton\npublic_discussions\ton\nnew_discussions_to_team\ton\nsatisfaction\ton\ncompany_sign_in_only\toff\n')
  t.equal(left.stderr, '1 token left lasting longer than 90 days\n')
  t.equal(smtp.mails.length, 0, 'nobody mailed when tokens are left as they are')
  const refusedToken = await run(['token', 'create', 'acme', 'bob@example.test', '--name', 'long', '--access', 'read', '--expires', '365'])
  t.same(refusedToken, { code: 1, stdout: '', stderr: "service-desk: expiry must be 7, 30, 90 days (this site's token policy allows at most 90 days)\n" })
  t.match((await run(['token', 'create', 'acme', 'bob@example.test', '--name', 'rw', '--access', 'write', '--expires', '7'])).stderr, 'only its administrators create Read and write tokens')

  const shortened = await ok(['site', 'policy', 'acme', '--max-token-days', '30', '--shorten'], { env: mail })
  t.equal(shortened.stderr, '1 token shortened to end within 30 days\n')
  t.same(smtp.mails.map((m) => m.to), [['ann@example.test']])
  const { subject, text } = readMail(smtp.mails[0])
  t.equal(subject, 'Your API tokens on acme expire sooner')
  t.match(text, /the operator set the longest lifetime of personal API tokens on acme to 30 days/)
  t.match(text, /"Nightly export": now expires \d{4}-\d\d-\d\d \d\d:\d\d UTC \(was /)
  t.notMatch(text, ann, 'never the value')
  const thirtyDays = new Date(clock() + 30 * 86_400_000).toISOString().slice(0, 10)
  t.match((await ok(['credentials', 'acme', '--owner', 'ann', '--kind', 'personal_token'])).stdout, `\texpires ${thirtyDays}\t`, 'now ends 30 days from now')

  const log = JSON.parse((await ok(['security-log', 'acme', '--json'])).stdout) as Array<{ kind: string; user_id: number | null; actor: string; detail: Record<string, string> }>
  const changes = log.filter((event) => event.kind === 'policy_changed')
  t.equal(changes.length, 2)
  t.match(changes[1], { user_id: null, actor: 'cli', detail: { max_token_days: '365 -> 90', legacy_token: 'true -> false', write_tokens: 'everyone -> administrators', by: 'the operator' } })
  t.equal(log.filter((event) => event.kind === 'token_shortened').length, 1)
  t.same(log.filter((event) => event.kind.startsWith('administrator_')).map((event) => event.kind), ['administrator_removed', 'administrator_added', 'administrator_added'])
  t.match((await ok(['security-log', 'acme'])).stdout, /\t-\tToken policy changed\t-\tby the command line\t/, "the site's own event names no one")
})

t.test('a mail the server refuses is told on standard error; the change stands', async (t) => {
  const { run } = await cliRunner(t)
  const smtp = await mailServer(t)
  smtp.state.refuse = true
  for (const argv of [['site', 'add', 'acme'], ['user', 'add', 'ann@example.test'], ['staff', 'add', 'acme', 'ann@example.test']]) await run(argv)
  await run(['token', 'create', 'acme', 'ann@example.test', '--name', 'x', '--expires', '365'])
  const result = await run(['site', 'policy', 'acme', '--max-token-days', '7', '--shorten'], { env: { SERVICE_SMTP_URL: smtp.url } })
  t.equal(result.code, 0)
  t.match(result.stderr, /^service-desk: could not mail ann@example\.test: .*mailbox unavailable/m)
  t.match(result.stdout, 'max_token_days\t7')
})
