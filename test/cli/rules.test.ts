import t from 'tap'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'

// Engines: one: the rules' commands: their words, options, the JSON they check and the dry run. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03); a rule changed by the operator keeps its author in test/rules/actions.test.ts.
// Issue 70: the sites' rules on the command line (cli/rules.ts): list, add (on events, on time),
// enable, disable, remove, and the dry run; the JSON of --conditions and --actions checked as the
// API checks its body, each refusal a usage error (2) or the store's (1), with nothing written.

const HOUR = 60 * 60 * 1000

/** A site acme with an administrator (ann), a second category (Billing, id 2) and a saved reply; and an app on the same database. */
async function rulesCli(t: Parameters<typeof cliRunner>[0]) {
  const cli = await cliRunner(t)
  for (const argv of [['site', 'add', 'acme'], ['user', 'add', 'ann@example.test', '--name', 'Ann'], ['staff', 'add', 'acme', 'ann@example.test', '--admin'], ['category', 'add', 'acme', 'Billing']]) {
    const done = await cli.run(argv)
    t.equal(done.code, 0, done.stderr)
  }
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...cli.appDatabase }, clock: cli.clock })
  t.teardown(() => app.close())
  await app.ready()
  const site = await app.sites.get('acme')
  const ann = (await app.users.staffOf(site.id))[0]!
  const thanks = await app.savedReplies.add(site.id, { title: 'Thanks', body: 'Thank you, {{customer_name}}.' })
  const rules = async () => (await cli.query<{ n: number | string }>('SELECT count(*) AS n FROM rules'))[0]!.n
  return { ...cli, app, site, ann, thanks, rules }
}

t.test('rules list, add on events and on time, enable, disable, remove; by the operator', async (t) => {
  const { run, ann, thanks, query } = await rulesCli(t)
  t.same(await run(['rules', 'list', 'acme']), { code: 0, stdout: '', stderr: '' }, 'none yet: nothing printed')

  const vip = await run([
    'rules', 'add', 'acme', '--name', 'VIP', '--events', 'created, customer_replied,created',
    '--conditions', '{"domains":["vip.test"],"states":["open"]}',
    '--actions', `[{"type":"add_tags","tags":["vip"]},{"type":"set_category","category":2},{"type":"set_owner","owner":${ann.id}},{"type":"notify","to":"team"}]`,
  ])
  t.equal(vip.code, 0, vip.stderr)
  t.equal(vip.stdout, `rule 1 of acme: 1\t1\tVIP\ton\ton created, customer_replied\t{"domains":["vip.test"],"states":["open"]}\ttag vip; move to Billing; give to Ann; notify the team\n`)
  t.equal(vip.stderr, '', 'nothing to warn of')

  const idle = await run([
    'rules', 'add', 'acme', '--name', 'Idle', '--after-minutes', '120', '--since', 'last_comment', '--business',
    '--conditions', '{"states":["open"],"awaiting":"customer"}', '--actions', `[{"type":"send_reply","saved_reply":${thanks.id}},{"type":"set_state","state":"resolved"}]`,
    '--position', '1', '--off',
  ])
  t.equal(idle.code, 0, idle.stderr)
  t.equal(idle.stdout, 'rule 2 of acme: 1\t2\tIdle\toff\tafter 120 min since last_comment, in business hours\t{"states":["open"],"awaiting":"customer"}\treply with "Thanks"; resolve\n')
  t.match(idle.stderr, /^service-desk: a rule saved here has no author, so its notes and replies are left out when it fires/, 'told of what it will not write')

  const later = await run(['rules', 'add', 'acme', '--name', 'Later', '--after-minutes', '30', '--conditions', '{"states":["new"]}', '--actions', '[{"type":"add_note","body":"Still waiting."}]'])
  t.equal(later.code, 0, later.stderr)
  t.match(later.stdout, /\tLater\ton\tafter 30 min since updated\t\{"states":\["new"\]\}\tadd an internal note\n$/)
  t.equal((await run(['rules', 'add', 'acme', '--name', 'Anything', '--events', 'tags_changed', '--actions', '[{"type":"webhook"}]'])).code, 0)

  // A supporter who leaves the staff is named by id.
  t.equal((await run(['staff', 'remove', 'acme', 'ann@example.test'])).code, 0)
  const listed = await run(['rules', 'list', 'acme'])
  t.equal(listed.code, 0)
  t.equal(
    listed.stdout,
    [
      '1\t2\tIdle\toff\tafter 120 min since last_comment, in business hours\t{"states":["open"],"awaiting":"customer"}\treply with "Thanks"; resolve',
      `2\t1\tVIP\ton\ton created, customer_replied\t{"domains":["vip.test"],"states":["open"]}\ttag vip; move to Billing; give to supporter ${ann.id} (gone); notify the team`,
      '3\t3\tLater\ton\tafter 30 min since updated\t{"states":["new"]}\tadd an internal note',
      '4\t4\tAnything\ton\ton tags_changed\tevery discussion\tpost a webhook',
      '',
    ].join('\n'),
  )

  t.same(await run(['rules', 'enable', 'acme', '2']), { code: 0, stdout: 'rule 2 of acme ("Idle") is on\n', stderr: '' })
  t.same(await run(['rules', 'disable', 'acme', '4']), { code: 0, stdout: 'rule 4 of acme ("Anything") is off\n', stderr: '' })
  t.same(await run(['rules', 'remove', 'acme', '3']), { code: 0, stdout: 'rule 3 of acme removed\n', stderr: '' })
  t.match((await run(['rules', 'list', 'acme'])).stdout, /^1\t2\tIdle\ton\t.*\n2\t1\tVIP\ton\t.*\n3\t4\tAnything\toff\t.*\n$/)

  const audit = (await run(['audit', 'acme', '--action', 'rule'])).stdout
  t.match(audit, /the operator\tcli\t-\trule\.created\tVIP/)
  t.match(audit, /the operator\tcli\t-\trule\.removed\tLater/)
  t.same(await query('SELECT author_id FROM rules WHERE author_id IS NOT NULL'), [], 'the operator is nobody of the site')
})

t.test('what does not fit is refused, each by its option or the store, with nothing written', async (t) => {
  const { run, rules } = await rulesCli(t)
  const tag = '[{"type":"add_tags","tags":["vip"]}]'
  const onEvents = ['--name', 'X', '--events', 'created']
  t.equal((await run(['rules', 'add', 'acme', '--name', 'Taken', '--events', 'created', '--actions', tag])).code, 0)
  const before = await rules()
  for (const [argv, code, words] of [
    [['--events', 'created', '--actions', tag], 2, /^service-desk: --name is needed/],
    [['--name', 'X', '--actions', tag], 2, /give --events or --after-minutes, one of them/],
    [['--name', 'X', '--events', 'created', '--after-minutes', '5', '--actions', tag], 2, /give --events or --after-minutes, one of them/],
    [[...onEvents, '--since', 'created', '--actions', tag], 2, /--since and --business are for a rule on time/],
    [[...onEvents, '--business', '--actions', tag], 2, /--since and --business are for a rule on time/],
    [['--name', 'X', '--events', 'created,flew', '--actions', tag], 2, /--events takes events, comma-separated, each one of: created, .*; not "flew"/],
    [['--name', 'X', '--events', ' , ', '--actions', tag], 2, /--events takes events, comma-separated, each one of: [^;]*\n$/],
    [['--name', 'X', '--after-minutes', '0', '--actions', tag], 2, /--after-minutes takes whole minutes from 1 to 525600, not "0"/],
    [['--name', 'X', '--after-minutes', 'an hour', '--actions', tag], 2, /--after-minutes takes whole minutes/],
    [['--name', 'X', '--after-minutes', '999999', '--actions', tag], 2, /--after-minutes takes whole minutes/],
    [['--name', 'X', '--after-minutes', '5', '--since', 'yesterday', '--actions', tag], 2, /--since is one of created, updated, last_comment, not "yesterday"/],
    [[...onEvents, '--actions', tag, '--position', 'first'], 2, /--position takes a place from 1 to 100, not "first"/],
    [[...onEvents, '--actions', tag, '--position', '101'], 2, /--position takes a place from 1 to 100/],
    [onEvents, 2, /--actions is needed: a JSON array/],
    [[...onEvents, '--actions', '[{type:"mark_spam"}]'], 2, /^service-desk: --actions is not JSON: /],
    [[...onEvents, '--actions', '{"type":"mark_spam"}'], 2, /--actions takes a JSON array of 1 to 20 actions/],
    [[...onEvents, '--actions', '[]'], 2, /--actions takes a JSON array of 1 to 20 actions/],
    [[...onEvents, '--actions', JSON.stringify(Array(21).fill({ type: 'webhook' }))], 2, /--actions takes a JSON array of 1 to 20 actions/],
    [[...onEvents, '--actions', '[{"type":"webhook"},null]'], 2, /--actions: action 2 has no type it knows; its "type" is one of: set_category, .*, webhook/],
    [[...onEvents, '--actions', '[{"type":"fly"}]'], 2, /--actions: action 1 has no type it knows/],
    [[...onEvents, '--actions', '[{"kind":"mark_spam"}]'], 2, /--actions: action 1 has no type it knows/],
    [[...onEvents, '--actions', '[{"type":"set_category"}]'], 2, /--actions: action 1 \(set_category\): must have required properties category\n$/],
    [[...onEvents, '--actions', '[{"type":"set_state","state":"closed"}]'], 2, /--actions: action 1 \(set_state\): state must be one of: open, resolved\n$/],
    [[...onEvents, '--actions', '[{"type":"add_tags","tags":["a"],"color":"red"}]'], 2, /--actions: action 1 \(add_tags\): color is not one it takes\n$/],
    [[...onEvents, '--actions', '[{"type":"set_category","category":"2"}]'], 2, /--actions: action 1 \(set_category\): category must be integer\n$/],
    [[...onEvents, '--conditions', "{'states':['open']}", '--actions', tag], 2, /^service-desk: --conditions is not JSON: /],
    [[...onEvents, '--conditions', '["open"]', '--actions', tag], 2, /--conditions takes a JSON object/],
    [[...onEvents, '--conditions', 'null', '--actions', tag], 2, /--conditions takes a JSON object/],
    [[...onEvents, '--conditions', '3', '--actions', tag], 2, /--conditions takes a JSON object/],
    [[...onEvents, '--conditions', '{"states":["open","sleeping"]}', '--actions', tag], 2, /--conditions: states\.1 must be one of: .*open/],
    [[...onEvents, '--conditions', '{"categories":[0]}', '--actions', tag], 2, /--conditions: categories\.0 must be >= 1\n$/],
    [[...onEvents, '--conditions', '{"colour":"red"}', '--actions', tag], 2, /--conditions: colour is not one it takes\n$/],
    [[...onEvents, '--frobnicate', '--actions', tag], 2, /unknown option --frobnicate/],
    [['--name', 'X', '--after-minutes', '60', '--actions', tag], 1, /^service-desk: a rule on time names the states it looks at \(conditions\.states\)\n$/],
    [[...onEvents, '--actions', '[{"type":"set_category","category":9}]'], 1, /^service-desk: names category 9, which is not a category of this site\n$/],
    [[...onEvents, '--actions', '[{"type":"send_reply","saved_reply":9}]'], 1, /names saved reply 9, which is not a saved reply of this site/],
    [['--name', 'Taken', '--events', 'created', '--actions', tag], 1, /^service-desk: is "Taken", which another rule of this site has\n$/],
  ] as const) {
    const refused = await run(['rules', 'add', 'acme', ...argv])
    t.equal(refused.code, code, argv.join(' '))
    t.match(refused.stderr, words, argv.join(' '))
    t.equal(refused.stdout, '', 'nothing printed but the error')
  }
  t.equal(await rules(), before, 'nothing written')

  for (const verb of ['enable', 'disable', 'remove']) {
    t.same(await run(['rules', verb, 'acme', 'one']), { code: 2, stdout: '', stderr: 'service-desk: a rule id is a number, not "one"\n' }, verb)
    t.same(await run(['rules', verb, 'acme', '7']), { code: 1, stdout: '', stderr: 'service-desk: there is no rule 7 on this site\n' }, `${verb}: the store's refusal`)
    t.same(await run(['rules', verb, 'nowhere', '1']), { code: 1, stdout: '', stderr: 'service-desk: there is no site "nowhere"\n' }, `${verb}: an unknown site`)
  }
  t.equal((await run(['rules', 'enable', 'acme'])).code, 2, 'no id')
  for (const argv of [['rules', 'list', 'nowhere'], ['rules', 'add', 'nowhere', ...onEvents, '--actions', tag], ['rules', 'dry-run', 'nowhere', ...onEvents, '--actions', tag]]) {
    t.same(await run(argv), { code: 1, stdout: '', stderr: 'service-desk: there is no site "nowhere"\n' }, argv.slice(0, 2).join(' '))
  }
  t.equal(await rules(), before, 'still nothing written')
})

t.test('rules dry-run: the discussions it would fire on as they are now, and what it would do; nothing saved', async (t) => {
  const { run, app, site, ann, clock, rules } = await rulesCli(t)
  const post = async (title: string, body: string, email: string) =>
    (await app.discussions.create({ siteId: site.id, categoryId: 1, title, body, via: 'api', supporterId: ann.id, onBehalfOf: { email } })).discussion
  const invoice = await post('My invoice', 'Where is it?', 'cy@vip.test')
  await post('Hello', 'Just saying hello.', 'dee@example.test')
  const later = await post('Second question', 'About the invoice\tagain.', 'eve@example.test')

  const tried = await run(['rules', 'dry-run', 'acme', '--name', 'Invoices', '--events', 'created', '--conditions', '{"words":["invoice"]}', '--actions', `[{"type":"add_tags","tags":["billing"]},{"type":"set_category","category":2},{"type":"set_owner","owner":"round_robin"}]`])
  t.equal(tried.code, 0, tried.stderr)
  t.equal(tried.stdout, `${later.number}\tSecond question\ttag billing; move to Billing; give to the category's next in turn\n${invoice.number}\tMy invoice\ttag billing; move to Billing; give to the category's next in turn\n`, 'newest first, its words in the opening post too')
  t.equal(tried.stderr, '2 of the 3 discussions looked at would match; nothing was saved\n')
  t.equal((await app.discussions.get(site.id, invoice.number)).tags, '', 'nothing changed')

  const none = await run(['rules', 'dry-run', 'acme', '--name', 'Nobody', '--events', 'created', '--conditions', '{"domains":["nowhere.test"]}', '--actions', '[{"type":"mark_spam"}]', '--position', '1', '--off'])
  t.same(none, { code: 0, stdout: '', stderr: '0 of the 3 discussions looked at would match; nothing was saved\n' }, "add's options taken as they are")

  const idle = ['rules', 'dry-run', 'acme', '--name', 'Idle', '--after-minutes', '90', '--since', 'created', '--conditions', '{"states":["new"],"domains":["vip.test"]}', '--actions', '[{"type":"set_state","state":"resolved"}]']
  t.equal((await run(idle)).stderr, '0 of the 3 discussions looked at would match; nothing was saved\n', 'not yet due')
  clock.advance(2 * HOUR)
  t.same(await run(idle), { code: 0, stdout: `${invoice.number}\tMy invoice\tresolve\n`, stderr: '1 of the 3 discussions looked at would match; nothing was saved\n' }, 'due')

  t.same(await run(['rules', 'dry-run', 'acme', '--name', 'Idle', '--after-minutes', '90', '--actions', '[{"type":"mark_spam"}]']), { code: 1, stdout: '', stderr: 'service-desk: a rule on time names the states it looks at (conditions.states)\n' }, 'checked as saving it would')
  t.equal((await run(['rules', 'dry-run', 'acme', '--name', 'X', '--events', 'created'])).code, 2, 'its options checked as add checks them')
  t.equal(Number(await rules()), 0, 'no rule saved')
  t.equal((await run(['rules', 'list', 'acme'])).stdout, '')
})
