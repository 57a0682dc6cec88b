import t from 'tap'
import { rawRows, rawStatement, supporterWithToken } from '../fixtures/app.ts'
import { desk } from '../fixtures/customer-desk.ts'
import { until } from '../fixtures/until.ts'
import { webClient } from '../fixtures/web.ts'

// Engines: both: the erasure writes to every table a customer is in, and the test reads every
// table of the database afterwards, each engine's own.
// Issue 74, item 2: an administrator erases a customer: a dry run first (how many discussions,
// comments, files, mails), then their discussions deleted or kept anonymised (the site's choice),
// their part of the other discussions taken out, their files, kept mails, links and account gone;
// the change feed and the webhooks told (customer.erased); search finds nothing of them; the other
// customers' discussions are whole. Outsiders are refused.

const CAROL = { email: 'carol.q@customer.example', name: 'Carol Quintessa' }
const FILE_TEXT = 'a photo of smoke, in words'
/** What must be nowhere once Carol is erased: her address, her name (each part), her file's bytes. */
const NEEDLES = ['carol', 'quintessa', FILE_TEXT, Buffer.from(FILE_TEXT).toString('hex')]

/**
 * Every table of the app's database, each row read whole (SQLite: every column, blobs as bytes;
 * PostgreSQL: the row as text, bytea as hex), and the tables whose rows hold any of the needles in
 * any case. SQLite's full-text index keeps its words in binary segments, prefix-compressed, which
 * no scan can read as text: its shadow tables are left out here, and the search is asked instead.
 */
async function tablesHolding(app: Parameters<typeof rawRows>[0], needles: string[]): Promise<string[]> {
  const sqlite = app.database.sqlite !== undefined
  const names = sqlite
    ? (await rawRows(app, "select name from sqlite_master where type = 'table' and name not like 'discussion_search_%' and name <> 'discussion_search'")).map((r) => String(r.name))
    : (await rawRows(app, "select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'")).map((r) => String(r.name))
  t.ok(names.length > 40, `read ${names.length} tables`)
  const holding: string[] = []
  for (const name of names) {
    const rows = sqlite ? await rawRows(app, `select * from "${name}"`) : await rawRows(app, `select t::text as row from "${name}" t`)
    const text = rows.map((row) => Object.values(row).map((v) => (Buffer.isBuffer(v) ? v.toString('latin1') : String(v))).join('\u0000')).join('\n').toLowerCase()
    if (needles.some((needle) => text.includes(needle.toLowerCase()))) holding.push(name)
  }
  return holding
}

t.test('an administrator erases a customer: a dry run, then nothing of them in any table, and the others whole', async (t) => {
  const { app, ann, general, send, api } = await desk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  await app.webhooks.add(ann.site.id, { url: 'https://hooks.example.test/in', events: ['customer.erased', 'discussion.created'] })
  // Carol writes by mail with a file; Ann greets her by name and notes something among the team.
  await send({ subject: 'Printer on fire', text: 'It smokes since Monday. Carol Quintessa, 3 Elm Street', from: `${CAROL.name} <${CAROL.email}>`, messageId: '<c1@customer.example>', attachments: [{ filename: 'smoke.txt', content: FILE_TEXT }] })
  const [hers] = await until('the mail taken in', async () => (await api('GET', '/demo/discussions')).json().discussions)
  t.equal((await api('POST', `/demo/discussions/${hers.number}/comments`, { body: 'Hi Carol, unplug it please.' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${hers.number}/comments`, { body: 'carol.q@customer.example called too.', internal: true })).statusCode, 201)
  // A second one of hers, by the API, resolved.
  const second = await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Quintessa invoice', body: 'Invoice please.', author_email: CAROL.email, author_name: CAROL.name })
  t.equal(second.statusCode, 201)
  // Dave's discussion, where Carol is copied and writes; and Dave's own, she is not on.
  const daves = (await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Scanner jams', body: 'Dave here: my scanner jams.', author_email: 'dave@customer.example', author_name: 'Dave' })).json()
  const alone = (await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Dave alone', body: 'Only Dave.', author_email: 'dave@customer.example', author_name: 'Dave' })).json()
  t.equal((await api('POST', `/demo/discussions/${daves.number}/participants`, { email: CAROL.email, name: CAROL.name })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${daves.number}/comments`, { body: 'Mine jams too.', author_email: CAROL.email })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${daves.number}/comments`, { body: 'Thanks Dave and Carol: blow on it.' })).statusCode, 201)
  // Her phone in a field of her discussion; Dave's discussion she is copied on merged into another of his (the merge's undo names her).
  await app.fields.add(ann.site.id, { key: 'phone', name: 'Phone', kind: 'text', audience: 'team' }, { id: null, name: 'the operator', via: 'cli' })
  t.equal((await app.inject({ method: 'PUT', url: `/demo/discussions/${hers.number}`, headers: ann.bearer, payload: { fields: { phone: 'Carol: 555-0100' } } })).statusCode, 200)
  const third = (await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Scanner again', body: 'Dave again.', author_email: 'dave@customer.example', author_name: 'Dave' })).json()
  const fourth = (await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Scanner, all of it', body: 'Dave, all.', author_email: 'dave@customer.example', author_name: 'Dave' })).json()
  t.equal((await api('POST', `/demo/discussions/${third.number}/participants`, { email: CAROL.email })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${third.number}/merge`, { into: fourth.number })).statusCode, 200)
  // She asked for a sign-in link on the support site: a link and its sealed mail wait.
  const visitor = webClient(app)
  await visitor.get('/demo/help/sign_in')
  t.equal((await visitor.post('/demo/help/sign_in', { email: CAROL.email })).statusCode, 200)
  const daveBefore = (await api('GET', `/demo/discussions/${alone.number}/comments`)).json()
  const carol = (await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers[0]
  t.equal((await api('POST', `/demo/customers/${carol.id}/export`)).statusCode, 200, 'an export leaves a line naming her in the record')
  t.same(await tablesHolding(app, NEEDLES).then((tables) => tables.includes('users') && tables.includes('file_pieces') && tables.includes('comments')), true, 'the scan finds her before')

  // The dry run says what will go, and changes nothing.
  const dry = await api('POST', `/demo/customers/${carol.id}/erase`, { dry_run: true })
  t.equal(dry.statusCode, 200, dry.body)
  t.same(dry.json(), { customer: { id: carol.id, name: CAROL.name, email: CAROL.email }, dry_run: true, erasure: 'anonymise', discussions: 2, others: 3, comments: 3, files: 2, mails: 1, account: 'removed', done: null })
  t.equal((await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers.length, 1)

  const erased = await api('POST', `/demo/customers/${carol.id}/erase`, {})
  t.equal(erased.statusCode, 200, erased.body)
  t.match(erased.json(), { dry_run: false, account: 'removed', done: { deleted: [], anonymised: [hers.number, second.json().number], others: [daves.number, third.number, fourth.number] } })
  t.same((await rawRows(app, 'select id from discussion_merges')), [], "the merge whose undo named her can no longer be undone")
  t.same((await api('GET', `/demo/discussions/${hers.number}`)).json().fields, { phone: '[erased]: 555-0100' })

  // Nothing of her in any table; search finds nothing of her.
  t.same(await tablesHolding(app, NEEDLES), [], 'no table holds her address, her name or her file')
  for (const q of ['Quintessa', 'smokes', 'Elm', 'carol']) t.same((await api('GET', `/demo/search?q=${q}`)).json().results, [], `search: ${q}`)
  t.equal((await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers.length, 0)
  t.equal((await app.users.find(CAROL.email)), undefined, 'her account is gone')

  // Her discussions stay for the team, without her: the team's reply, its note, their numbers.
  const kept = (await api('GET', `/demo/discussions/${hers.number}/comments`)).json().comments
  t.same(kept.map((c: { body: string }) => c.body), ["(Removed at the customer's request.)", 'Hi [erased], unplug it please.', '[erased] called too.'])
  t.match(kept[0], { author_name: 'Erased customer' })
  // Dave's discussions are whole but for her part.
  const shared = (await api('GET', `/demo/discussions/${daves.number}/comments`)).json().comments
  t.same(shared.map((c: { body: string }) => c.body), ['Dave here: my scanner jams.', "(Removed at the customer's request.)", 'Thanks Dave and [erased]: blow on it.'])
  t.same((await api('GET', `/demo/discussions/${daves.number}/participants`)).json().participants, [], 'she is no longer copied')
  t.same((await api('GET', `/demo/discussions/${alone.number}/comments`)).json(), daveBefore, "Dave's own discussion is untouched")
  t.same((await api('GET', '/demo/search?q=jams')).json().results.map((r: { discussion: { number: number } }) => r.discussion.number), [daves.number], "Dave's words are found")

  // The change feed tells of each; the webhooks hear it once; the record of changes keeps the line without her.
  const feed = (await api('GET', '/demo/changes')).json()
  const told = (feed.changes as Array<{ type: string; discussion: { number: number; author_name: string } }>).filter((c) => c.type === 'customer.erased')
  t.same(told.map((c) => c.discussion.number), [hers.number, second.json().number, daves.number, third.number, fourth.number])
  const hooks = await rawRows(app, "select payload from outbox where kind = 'webhook'")
  const erasedEvents = hooks.map((h) => JSON.parse(String(h.payload))).filter((e) => e.type === 'customer.erased')
  t.equal(erasedEvents.length, 1)
  t.match(erasedEvents[0].data, { customer_id: carol.id, anonymised: [hers.number, second.json().number], others: [daves.number, third.number, fourth.number] })
  const [line] = await app.securityLog.changes({ siteId: ann.site.id, action: 'customer.erased', limit: 1 })
  t.match(line, { target: `customer ${carol.id}`, actorId: ann.user.id, detail: { anonymised: 2, others: 3, account: 'removed' } })
  const [exportLine] = await app.securityLog.changes({ siteId: ann.site.id, action: 'customer.exported', limit: 1 })
  t.equal(exportLine!.target, '[erased]', 'the export stays on record, without her address')

  // Erasing her again: she is no customer any more.
  t.equal((await api('POST', `/demo/customers/${carol.id}/erase`, {})).statusCode, 404)
  // Her discussions' counts still add up.
  const listed = (await api('GET', '/demo/discussions')).json()
  t.equal(listed.total, 5, 'four live and the one merged')
})

t.test('a site that deletes: her discussions are deleted for good, never restored; the counts stay right', async (t) => {
  const { app, ann, general, api } = await desk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const put = await api('PUT' as 'POST', '/demo/privacy', { erasure: 'delete' })
  t.equal(put.statusCode, 200, put.body)
  t.match(put.json(), { erasure: 'delete', retention_months: null, retention_due: 0 })
  const started = []
  for (const title of ['One of hers', 'Two of hers']) started.push((await api('POST', `/demo/categories/${general.id}/discussions`, { title, body: `${CAROL.name} writes.`, author_email: CAROL.email, author_name: CAROL.name })).json())
  const daves = (await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Dave', body: 'Dave writes.', author_email: 'dave@customer.example' })).json()
  await api('POST', `/demo/discussions/${started[1].number}/resolve`, {})
  // A third of hers merged into Dave's: her comment moved there, the one merged left without any.
  const merged = (await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Three of hers', body: 'Mine, merged.', author_email: CAROL.email, author_name: CAROL.name })).json()
  t.equal((await api('POST', `/demo/discussions/${merged.number}/merge`, { into: daves.number })).statusCode, 200)
  const carol = (await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers[0]
  // She is a customer of another site too: her account stays for it.
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@other.example' })
  await app.users.addStaff(other.site.id, carol.id)
  await app.users.removeStaff(other.site.id, carol.id)

  const erased = await api('POST', `/demo/customers/${carol.id}/erase`, {})
  t.equal(erased.statusCode, 200, erased.body)
  t.match(erased.json(), { erasure: 'delete', account: 'kept', done: { deleted: [...started.map((d) => d.number), merged.number], anonymised: [], others: [daves.number] } })
  t.same((await api('GET', `/demo/discussions/${daves.number}/comments`)).json().comments.map((c: { body: string }) => c.body), ['Dave writes.', "(Removed at the customer's request.)"], "her comment merged into Dave's is taken out")
  t.ok(await app.users.find(CAROL.email), 'her account stays for the other site')
  t.equal((await app.inject({ method: 'GET', url: `/other/customers?email=${CAROL.email}`, headers: other.bearer })).json().customers.length, 1)
  const gone = (await api('GET', `/demo/discussions/${started[0].number}`)).json()
  t.match(gone, { state: 'deleted', title: '(deleted)', comments_count: 0 })
  const restore = await api('POST', `/demo/discussions/${started[0].number}/restore`, {})
  t.equal(restore.statusCode, 409, 'deleted for good: never restored')
  t.same((await api('GET', `/demo/discussions/${started[0].number}/comments`)).json().comments, [])
  // The listing's total (a sum of the kept counts) is the count of what is there.
  const live = (await api('GET', '/demo/discussions')).json()
  t.equal(live.total, 1)
  t.equal(live.discussions[0].number, daves.number)
  const deleted = (await api('GET', '/demo/discussions/deleted')).json()
  t.equal(deleted.total, 3, 'hers and the one merged')
  t.equal((await api('GET', '/demo/discussions/resolved')).json().total, 0)
})

t.test("the erasure's refusals: supporters, another site's administrator, the staff, unknown ids, bad bodies", async (t) => {
  const { app, ann, general, api } = await desk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Hers', body: 'Mine.', author_email: CAROL.email, author_name: CAROL.name })
  const carol = (await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers[0]
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  t.equal((await app.inject({ method: 'POST', url: `/demo/customers/${carol.id}/erase`, headers: bob.bearer, payload: { dry_run: true } })).statusCode, 403)
  t.equal((await app.inject({ method: 'PUT', url: '/demo/privacy', headers: bob.bearer, payload: { erasure: 'delete' } })).statusCode, 403)
  const olga = await supporterWithToken(app, { site: 'other', email: 'olga@other.example' })
  await app.users.setAdministrator(olga.site.id, olga.user.id, true)
  t.equal((await app.inject({ method: 'POST', url: `/other/customers/${carol.id}/erase`, headers: olga.bearer, payload: {} })).statusCode, 404, "not a customer of Olga's site")
  t.equal((await api('POST', `/demo/customers/${bob.user.id}/erase`, { dry_run: true })).statusCode, 404, 'a member of the staff is no customer')
  t.equal((await api('POST', '/demo/customers/99999/erase', {})).statusCode, 404)
  t.equal((await api('POST', `/demo/customers/${carol.id}/erase`, { dry_run: 'yes' })).statusCode, 400)
  t.equal((await api('POST', `/demo/customers/${carol.id}/erase`, { everything: true })).statusCode, 400)
  t.equal((await api('PUT' as 'POST', '/demo/privacy', { erasure: 'shred' })).statusCode, 400)
  t.equal((await api('PUT' as 'POST', '/demo/privacy', { retention_months: 0 })).statusCode, 400)
  t.equal((await api('PUT' as 'POST', '/demo/privacy', { retention_months: 121 })).statusCode, 400)
  t.equal((await api('GET', '/demo/privacy?retention_months=x')).statusCode, 400)
  t.equal((await api('GET', '/demo/customers/99999/erasure')).statusCode, 404)
  t.same(await app.erasure.step(ann.site.id, 99999), { deleted: [], anonymised: [], others: [] }, 'a step for no customer does nothing')
  // A customer with nothing on the site: a dry run of nothing but the account.
  const erin = await app.users.insert({ email: 'erin@customer.example', name: 'Erin' }, null)
  await app.users.addStaff(ann.site.id, erin.id)
  await app.users.removeStaff(ann.site.id, erin.id)
  t.match((await api('GET', `/demo/customers/${erin.id}/erasure`)).json(), { discussions: 0, others: 0, comments: 0, files: 0, mails: 0, account: 'removed' })
  // Nothing was erased by any of it.
  t.equal((await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers.length, 1)
})

t.test('an erasure stopped halfway goes on when run again; what of theirs came meanwhile is erased too', async (t) => {
  const { app, ann, general, api } = await desk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  // Bob hears of every new discussion: the mail telling him names her.
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await app.users.setNotifications(ann.site.id, bob.user.id, { newDiscussions: true, owned: true, digest: false })
  const write = (title: string) => api('POST', `/demo/categories/${general.id}/discussions`, { title, body: 'A question.', author_email: CAROL.email, author_name: CAROL.name })
  for (const title of ['One', 'Two', 'Three']) t.equal((await write(title)).statusCode, 201)
  const carol = (await api('GET', `/demo/customers?email=${CAROL.email}`)).json().customers[0]
  // More lines naming her than a page of the end's reads: the record's (her address the target, or in
  // the detail) and the security log's; and a sender rule of her address.
  const now = new Date()
  for (let i = 0; i < 260; i++) {
    await rawStatement(app, "insert into audit_events (site_id, actor, via, action, target, detail, created_at) values (?, 'the operator', 'cli', 'customer.fields_changed', ?, ?, ?)", [ann.site.id, i % 2 ? CAROL.email : 'someone', i % 2 ? '{}' : JSON.stringify({ after: { contact: CAROL.email } }), now])
    await rawStatement(app, "insert into security_events (site_id, kind, created_at, detail) values (?, 'sign_in_failed', ?, ?)", [ann.site.id, now, JSON.stringify({ email: CAROL.email })])
  }
  await app.senders.set(ann.site.id, CAROL.email, 'allow')
  // A process stops after one step of one discussion.
  t.same(await app.erasure.step(ann.site.id, carol.id, 1), { deleted: [], anonymised: [1], others: [] })
  t.match((await api('GET', `/demo/customers/${carol.id}/erasure`)).json(), { discussions: 2, comments: 2 }, 'the dry run says what is left')
  // The steps are done, then a mail of hers comes before the end: the end says there is more.
  await app.erasure.step(ann.site.id, carol.id)
  t.equal((await write('Four, meanwhile')).statusCode, 201)
  t.equal(await app.erasure.finish(ann.site.id, carol.id, { id: ann.user.id, name: ann.user.email, via: 'api' }, { deleted: [], anonymised: [], others: [] }), 'more')
  const erased = await api('POST', `/demo/customers/${carol.id}/erase`, {})
  t.equal(erased.statusCode, 200)
  t.same(erased.json().done, { deleted: [], anonymised: [4], others: [] }, 'the run again goes on with what is left')
  const titles = (await api('GET', '/demo/discussions')).json().discussions.map((d: { title: string; author_name: string }) => [d.title, d.author_name])
  t.same(titles.sort(), [['Four, meanwhile', 'Erased customer'], ['One', 'Erased customer'], ['Three', 'Erased customer'], ['Two', 'Erased customer']])
  t.equal(await app.erasure.finish(ann.site.id, carol.id, { id: ann.user.id, name: ann.user.email, via: 'api' }, { deleted: [], anonymised: [], others: [] }), 'none', 'no customer any more')
  t.same(await rawRows(app, 'select id from audit_events where lower(target) like ? or lower(detail) like ?', ['%carol.q%', '%carol.q%']), [], "the record's lines are kept without her")
  t.equal((await rawRows(app, 'select id from audit_events where detail = ?', ['{}'])).length >= 260, true, 'all of them kept')
  t.same(await rawRows(app, 'select id from security_events where lower(detail) like ?', ['%carol.q%']), [])
  t.same(await rawRows(app, 'select id from sender_rules'), [], 'the sender rule of her address is gone')
  t.same(await rawRows(app, 'select kind from outbox where lower(payload) like ?', ['%quintessa%']), [], 'no mail left naming her (the team told of her new discussions by name)')
  // Her account is emptied: no name, no address, no way in.
  const [row] = await rawRows(app, 'select name, email, password_hash, disabled from users where id = ?', [carol.id])
  t.match(row, { name: 'Erased customer', email: `erased-account-${carol.id}@erased.invalid`, password_hash: null })
  t.ok(row!.disabled === 1 || row!.disabled === true)
})
