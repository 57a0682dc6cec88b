import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { personWithPassword, signedInPerson, webClient } from '../fixtures/web.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { form } from '../fixtures/files.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: a merge moves rows between discussions in one transaction (comments renumbered
// under a unique index, participants, counts, the feed), which each engine must do alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Merging a discussion into another of its site, and undoing it (issue 71; db/stores/merges.ts;
// docs/decisions.md, "Merge and split"), through the API as a client sees it.

type Comment = { number: number; body: string; author_email: string; attachments: Array<{ id: number; name: string }>; moved_from: { discussion: number; comment: number; discussion_href: string } | null }

t.test('a merge moves every comment and file once, in time order, marked; its people join; its address redirects; undo puts both back', async (t) => {
  const fixture = await discussionApp(t)
  const { app, api, create, clock } = fixture
  const a = await create({ title: 'Invoice is wrong', body: 'The total is wrong.', author_email: 'carol@example.test' })
  clock.advance(60_000)
  const b = await create({ title: 'Invoice 2026-03 again', body: 'Still wrong, see my other mail.', author_email: 'carol.finance@example.test' })
  clock.advance(60_000)
  const upload = await form({ file: { name: 'invoice.txt', bytes: Buffer.from('total: 12.00\n') } })
  const up = (await app.inject({ method: 'POST', url: '/demo/uploads', headers: { ...fixture.ann.bearer, 'content-type': upload.type }, payload: upload.payload })).json().uploads[0]
  t.equal((await api('POST', `/demo/discussions/${a.number}/comments`, { body: 'Here is what we see.', uploads: [up.id] })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${a.number}/participants`, { email: 'boss@example.test' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${b.number}/participants`, { email: 'boss@example.test' })).statusCode, 201, 'someone on both')
  const totalBefore = (await api('GET', '/demo/discussions')).json().total

  const merged = await api('POST', `/demo/discussions/${a.number}/merge`, { into: b.number })
  t.equal(merged.statusCode, 200, merged.body)
  t.match(merged.json(), { number: b.number, comments_count: 3, state: 'new', merged_into: null, merge_href: `https://api.example.test/demo/discussions/${b.number}/merge` }, 'the answer is the discussion merged into')

  const shown = (await api('GET', `/demo/discussions/${b.number}`)).json() as { comments: Comment[] }
  t.same(shown.comments.map((c) => [c.number, c.body, c.moved_from && [c.moved_from.discussion, c.moved_from.comment]]), [
    [1, 'Still wrong, see my other mail.', null],
    [2, 'The total is wrong.', [a.number, 1]],
    [3, 'Here is what we see.', [a.number, 2]],
  ], "its own comments first, as they were; the other's after them in the order they were written, each saying where it was")
  t.equal(shown.comments[1]!.moved_from!.discussion_href, `https://api.example.test/demo/discussions/${a.number}`)
  t.same(shown.comments[2]!.attachments.map((f) => [f.id, f.name]), [[up.id, 'invoice.txt']], 'the file went with its comment')
  t.equal((await api('GET', `/demo/attachments/${up.id}`)).body, 'total: 12.00\n', 'and still downloads')
  const people = (await api('GET', `/demo/discussions/${b.number}/participants`)).json().participants.map((p: { email: string }) => p.email)
  t.same(people.sort(), ['boss@example.test', 'carol@example.test'], "the merged one's customer and participants joined, once each")

  const moved = await api('GET', `/demo/discussions/${a.number}?x=1`)
  t.equal(moved.statusCode, 307, 'a merge may be undone: a temporary redirect')
  t.equal(moved.headers.location, `https://api.example.test/demo/discussions/${b.number}?x=1`)
  t.match(moved.json(), { error: 'merged', message: `Discussion ${a.number} was merged into discussion ${b.number}.` })
  t.equal((await api('GET', `/demo/discussions/${a.number}/comments?page=1`)).headers.location, `https://api.example.test/demo/discussions/${b.number}/comments?page=1`, 'its comments too')
  t.match((await api('GET', '/demo/discussions/merged')).json(), { total: 1, discussions: [{ number: a.number, state: 'merged', comments_count: 0, merged_into: { number: b.number, href: `https://api.example.test/demo/discussions/${b.number}` } }] }, 'listed among the merged')
  t.equal((await api('GET', '/demo/discussions')).json().total, totalBefore - 1, 'and no longer among the live ones')
  const refused = await api('POST', `/demo/discussions/${a.number}/comments`, { body: 'Late words.' })
  t.equal(refused.statusCode, 409, 'a merged discussion takes no comment')
  t.match(refused.json().message, `was merged into discussion ${b.number}`)
  t.equal((await api('POST', `/demo/discussions/${a.number}/resolve`)).statusCode, 409, 'nor an action')
  t.equal((await api('DELETE', `/demo/discussions/${a.number}`)).statusCode, 409, 'nor a deletion')

  clock.advance(60_000)
  t.equal((await api('POST', `/demo/discussions/${b.number}/comments`, { body: 'Fixed both, sorry.' })).statusCode, 201)
  const undone = await api('POST', `/demo/discussions/${a.number}/unmerge`)
  t.equal(undone.statusCode, 200, undone.body)
  t.match(undone.json(), { number: a.number, state: 'open', comments_count: 2, merged_into: null })
  const back = (await api('GET', `/demo/discussions/${a.number}`)).json() as { comments: Comment[] }
  t.same(back.comments.map((c) => [c.number, c.body, c.moved_from, c.attachments.length]), [[1, 'The total is wrong.', null, 0], [2, 'Here is what we see.', null, 1]], 'its comments back with their numbers and files, unmarked')
  const there = (await api('GET', `/demo/discussions/${b.number}`)).json() as { comments_count: number; comments: Comment[] }
  t.same(there.comments.map((c) => [c.number, c.body]), [[1, 'Still wrong, see my other mail.'], [2, 'Fixed both, sorry.']], 'the later reply takes the number left free')
  t.equal(there.comments_count, 2)
  t.equal((await api('GET', `/demo/discussions/${b.number}/comments/2`)).json().body, 'Fixed both, sorry.')
  t.same((await api('GET', `/demo/discussions/${b.number}/participants`)).json().participants.map((p: { email: string }) => p.email), ['boss@example.test'], 'those it brought left; the one it had stays')
  t.equal((await api('GET', '/demo/discussions')).json().total, totalBefore, 'live again')
  t.equal((await api('POST', `/demo/discussions/${a.number}/unmerge`)).statusCode, 409, 'undone once')
  t.equal((await api('POST', `/demo/discussions/${a.number}/comments`, { body: 'Back.' })).statusCode, 201, 'and written to again')
})

t.test('what a merge refuses: itself, no such discussion, another site, a merged, deleted or spam one, a stale version, and who may not', async (t) => {
  const fixture = await discussionApp(t)
  const { app, api, create, ann } = fixture
  const one = await create({ title: 'One', author_email: 'carol@example.test' })
  const two = await create({ title: 'Two', author_email: 'dave@example.test' })
  const gone = await create({ title: 'Gone' })
  t.equal((await api('DELETE', `/demo/discussions/${gone.number}`)).statusCode, 200)
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  const theirs = await app.discussions.create({ siteId: other.site.id, categoryId: (await app.categories.add(other.site.id, 'Help', true)).id, title: 'Theirs', body: 'Private words.', via: 'api', supporterId: other.user.id })

  const refusal = async (number: number, into: unknown, status: number, field?: string) => {
    const res = await api('POST', `/demo/discussions/${number}/merge`, { into })
    t.equal(res.statusCode, status, `${number} into ${JSON.stringify(into)}: ${res.body}`)
    if (field) t.equal(res.json().fields?.[0]?.field, field)
    return res.json()
  }
  await refusal(one.number, one.number, 400, 'into')
  await refusal(one.number, 99, 400, 'into')
  await refusal(99, one.number, 404)
  await refusal(one.number, 'soon', 400, 'into')
  await refusal(one.number, 0, 400, 'into')
  await refusal(one.number, 1.5, 400, 'into')
  await refusal(one.number, `https://api.example.test/other/discussions/${theirs.discussion.number}`, 400, 'into')
  await refusal(one.number, `https://api.example.test/demo/discussions/${gone.number}`, 409)
  await refusal(gone.number, two.number, 409)
  const junk = await create({ title: 'Buy now' })
  t.equal((await api('POST', `/demo/discussions/${junk.number}/spam`)).statusCode, 200)
  t.match((await refusal(one.number, junk.number, 409)).message, `Discussion ${junk.number} is marked spam: it cannot be merged.`)
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, {})).statusCode, 400, 'into is required')
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number, and: 1 })).statusCode, 400, 'and nothing else')
  t.equal((await app.inject({ method: 'POST', url: `/other/discussions/${theirs.discussion.number}/merge`, headers: ann.bearer, payload: { into: one.number } })).statusCode, 401, "one site's token does not reach another's")
  t.equal((await api('GET', `/other/discussions/${theirs.discussion.number}`)).statusCode, 401)
  t.equal((await app.inject({ method: 'GET', url: `/other/discussions/${theirs.discussion.number}`, headers: other.bearer })).json().comments_count, 1, 'theirs untouched')

  const reader = await supporterWithToken(app, { email: 'reader@example.test', access: 'read' })
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number }, reader.bearer)).statusCode, 403, 'a read token')
  const cleo = await supporterWithToken(app, { email: 'cleo@example.test' })
  await app.users.setStaffRole(ann.site.id, cleo.user.id, 'collaborator')
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number }, cleo.bearer)).statusCode, 403, 'a collaborator writes notes only')
  const stale = await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number }, { ...ann.bearer, 'if-match': '"v999"' })
  t.equal(stale.statusCode, 412, 'If-Match of the merged one')

  const byHref = await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.html_href })
  t.equal(byHref.statusCode, 200, `its page's address names it too: ${byHref.body}`)
  await refusal(one.number, two.number, 409)
  await refusal(two.number, one.number, 409)
  t.equal((await api('GET', `/demo/discussions/${one.number}`)).statusCode, 307)
  t.equal((await api('GET', `/demo/discussions/${two.number}`)).json().comments_count, 2, 'nothing moved twice')
})

t.test("a resolved discussion given a customer's unanswered question is open again, and owes the answer", async (t) => {
  const { api, create } = await discussionApp(t)
  const done = await create({ title: 'Done', author_email: 'carol@example.test' })
  t.equal((await api('POST', `/demo/discussions/${done.number}/comments`, { body: 'Fixed.' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${done.number}/resolve`)).json().state, 'resolved')
  const asked = await create({ title: 'Also', author_email: 'carol@example.test' })
  const merged = (await api('POST', `/demo/discussions/${asked.number}/merge`, { into: done.number })).json()
  t.match(merged, { state: 'open', facts: { reopens: 1 } })
  t.match((await api('GET', '/demo/discussions/new')).json(), { total: 0 }, 'the question merged is in no listing of its own')
  t.match((await api('GET', '/demo/discussions/open')).json(), { total: 1, discussions: [{ number: done.number }] })
})

t.test('the last merge into a discussion is undone for a day, and only the last', async (t) => {
  const { api, create, clock } = await discussionApp(t)
  const [one, two, three] = [await create({ title: 'One' }), await create({ title: 'Two' }), await create({ title: 'Three' })]
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: three.number })).statusCode, 200)
  t.equal((await api('POST', `/demo/discussions/${two.number}/merge`, { into: three.number })).statusCode, 200)
  const older = await api('POST', `/demo/discussions/${one.number}/unmerge`)
  t.equal(older.statusCode, 409, 'another merge came after it')
  t.match(older.json().message, `Only the last merge into discussion ${three.number}`)
  t.equal((await api('POST', `/demo/discussions/${three.number}/unmerge`)).statusCode, 409, 'a discussion not merged')
  clock.advanceDays(1)
  t.equal((await api('POST', `/demo/discussions/${two.number}/unmerge`)).statusCode, 409, 'a day after')
  t.equal((await api('GET', `/demo/discussions/${three.number}`)).json().comments_count, 3)
})

t.test('a merge into one merged since redirects to where the comments are now', async (t) => {
  const { api, create } = await discussionApp(t)
  const [one, two, three] = [await create({ title: 'One' }), await create({ title: 'Two' }), await create({ title: 'Three' })]
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number })).statusCode, 200)
  t.equal((await api('POST', `/demo/discussions/${two.number}/merge`, { into: three.number })).statusCode, 200)
  t.equal((await api('GET', `/demo/discussions/${one.number}`)).headers.location, `https://api.example.test/demo/discussions/${three.number}`)
  const comments = (await api('GET', `/demo/discussions/${three.number}`)).json().comments as Comment[]
  t.same(comments.map((c) => c.moved_from && [c.moved_from.discussion, c.moved_from.comment]), [null, [two.number, 1], [one.number, 1]], 'each comment says where it was written first')
  t.equal((await api('POST', `/demo/discussions/${one.number}/unmerge`)).statusCode, 409, 'the one it went into went further: undo that first')
  t.equal((await api('POST', `/demo/discussions/${two.number}/unmerge`)).statusCode, 200)
  t.equal((await api('POST', `/demo/discussions/${one.number}/unmerge`)).statusCode, 200, 'then this one')
  t.same(((await api('GET', `/demo/discussions/${one.number}`)).json().comments as Comment[]).map((c) => c.moved_from), [null])
})

t.test('on the pages: merge by number or address, the comments marked, the old page leads there, undo for a day; a customer follows only where they may read', onSqlite("the merge and undo forms, the pages' words, and where a customer is led"), async (t) => {
  const { app, create, problems } = await discussionApp(t)
  const carol = await personWithPassword(app, { role: 'customer', email: 'carol@example.test' })
  const mine = await create({ title: 'Printer jams', body: 'It jams.', author_email: carol.email }, problems.id)
  const theirs = await create({ title: 'Printers down', body: 'All of them.', author_email: 'dave@example.test' }, problems.id)
  const { web } = await signedInPerson(app)
  const customer = webClient(app)
  await customer.signIn(carol.email, carol.password)
  t.match((await customer.get(`/demo/help/${mine.number}`)).body, /It jams\./, 'her page, open before the merge')
  const page = await web.get(`/demo/discussions/${mine.number}`)
  t.match(page.body, /data-merge-form/)

  const bad = await web.post(`/demo/discussions/${mine.number}/merge`, { into: 'soon' })
  t.equal(bad.statusCode, 400)
  t.match(bad.body, /the discussion to merge into is not a discussion&#39;s number or address/)
  const forged = await web.request('POST', `/demo/discussions/${mine.number}/merge`, { into: `#${theirs.number}` })
  t.equal(forged.statusCode, 403, 'a form without the CSRF token of the page is refused')
  const merged = await web.post(`/demo/discussions/${mine.number}/merge`, { into: `#${theirs.number}` })
  t.equal(merged.statusCode, 303)
  t.equal(merged.headers.location, `https://help.example.test/demo/discussions/${theirs.number}?done=merged`)
  const there = await web.get(merged.headers.location as string)
  t.match(there.body, new RegExp(`data-merge="${mine.number}">#${mine.number} Printer jams`))
  t.match(there.body, new RegExp(`data-moved-from="${mine.number}">From discussion #${mine.number}, comment 1<`))
  t.match(there.body, /Undo this merge/)
  const old = await web.get(`/demo/discussions/${mine.number}`)
  t.equal(old.statusCode, 307)
  t.equal(old.headers.location, `https://help.example.test/demo/discussions/${theirs.number}`)

  const late = await customer.post(`/demo/help/${mine.number}/reply`, { body: 'Written before it moved.' })
  t.equal(late.statusCode, 303, 'her answer from the page shown before the merge is refused')
  t.equal(late.headers.location, `https://help.example.test/demo/help/${mine.number}`, 'and she is shown where it went')
  const elsewhere = await customer.get(`/demo/help/${mine.number}`)
  t.equal(elsewhere.statusCode, 200, "the other discussion is someone else's: it is not shown")
  t.match(elsewhere.body, /This discussion continues elsewhere/)
  t.notMatch(elsewhere.body, /Printers down|dave/)

  await web.get(`/demo/discussions/${theirs.number}`)
  const undone = await web.post(`/demo/discussions/${theirs.number}/unmerge`, { from: String(mine.number) })
  t.equal(undone.statusCode, 303)
  t.equal(undone.headers.location, `https://help.example.test/demo/discussions/${mine.number}?done=unmerged`)
  t.match((await web.get(undone.headers.location as string)).body, /The merge is undone/)
  t.match((await customer.get(`/demo/help/${mine.number}`)).body, /It jams\./, 'hers again')
  t.equal((await web.post(`/demo/discussions/${theirs.number}/unmerge`, { from: String(mine.number) })).statusCode, 409, 'undone once')

  const own = await create({ title: 'Printer jams again', body: 'Again.', author_email: carol.email }, problems.id)
  await web.get(`/demo/discussions/${mine.number}`)
  t.equal((await web.post(`/demo/discussions/${mine.number}/merge`, { into: `https://help.example.test/demo/discussions/${own.number}` })).statusCode, 303, 'by its address')
  const followed = await customer.get(`/demo/help/${mine.number}`)
  t.equal(followed.statusCode, 307, 'her own: she follows it there')
  t.equal(followed.headers.location, `https://help.example.test/demo/help/${own.number}`)
})

t.test('a split makes a discussion of the comment chosen (and those after it): its author the customer, its files along, a link both ways', async (t) => {
  const fixture = await discussionApp(t)
  const { app, api, create, clock } = fixture
  const long = await create({ title: 'Printer and invoice', body: 'The printer jams.', author_email: 'carol@example.test' })
  clock.advance(60_000)
  t.equal((await api('POST', `/demo/discussions/${long.number}/comments`, { body: 'Try the rear tray.' })).statusCode, 201)
  const upload = await form({ file: { name: 'invoice.txt', bytes: Buffer.from('total: 12.00\n') } })
  const up = (await app.inject({ method: 'POST', url: '/demo/uploads', headers: { ...fixture.ann.bearer, 'content-type': upload.type }, payload: upload.payload })).json().uploads[0]
  t.equal((await api('POST', `/demo/discussions/${long.number}/comments`, { body: 'Also, my invoice is wrong.', author_email: 'carol@example.test', uploads: [up.id] })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${long.number}/comments`, { body: 'Looking at the invoice.' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${long.number}/comments`, { body: 'Between us: refund it.', internal: true })).statusCode, 201)

  const made = await api('POST', `/demo/discussions/${long.number}/split`, { comment: 3, following: true, title: 'Invoice is wrong' })
  t.equal(made.statusCode, 201, made.body)
  const split = made.json()
  t.equal(made.headers.location, split.href)
  t.match(split, { title: 'Invoice is wrong', state: 'open', author_email: 'carol@example.test', comments_count: 3, split_from: { number: long.number, href: `https://api.example.test/demo/discussions/${long.number}` } })
  const moved = (await api('GET', split.href.replace('https://api.example.test', ''))).json().comments as Comment[]
  t.same(moved.map((c) => [c.number, c.body, c.moved_from?.comment]), [[1, 'Also, my invoice is wrong.', 3], [2, 'Looking at the invoice.', 4], [3, 'Between us: refund it.', 5]], 'its first comment is the one chosen; the rest follow in order')
  t.same(moved[0]!.attachments.map((f) => f.id), [up.id], 'with its file')
  const left = (await api('GET', `/demo/discussions/${long.number}`)).json()
  t.same(left.comments.map((c: Comment) => c.body), ['The printer jams.', 'Try the rear tray.', `Split into discussion #${split.number}: Invoice is wrong`], 'the rest stays, and a note points to the new one')
  t.match(left, { comments_count: 3, split_from: null })
  t.equal(left.comments[2].internal, true)

  const alone = await api('POST', `/demo/discussions/${long.number}/split`, { comment: 2 })
  t.equal(alone.statusCode, 201, alone.body)
  t.match(alone.json(), { title: 'Printer and invoice', author_email: 'carol@example.test', state: 'open', comments_count: 1 }, "a staff comment: the discussion's customer is the new one's")
  const after = (await api('GET', `/demo/discussions/${long.number}`)).json()
  t.same(after.comments.map((c: Comment) => [c.number, c.body.slice(0, 12)]), [[1, 'The printer '], [2, `Split into d`], [3, 'Split into d']], 'the later comments take the number left free')
  t.equal((await api('GET', `/demo/discussions/${long.number}/comments/3`)).json().body, `Split into discussion #${alone.json().number}: Printer and invoice`)

  // A merge found wrong a day later: its comments split off again, still saying where they were written.
  const other = await create({ title: 'Other', body: 'Another thing.', author_email: 'dave@example.test' })
  t.equal((await api('POST', `/demo/discussions/${other.number}/merge`, { into: long.number })).statusCode, 200)
  clock.advanceDays(2)
  const back = await api('POST', `/demo/discussions/${long.number}/split`, { comment: 4, following: true, title: 'Other again' })
  t.match(back.json(), { author_email: 'dave@example.test', comments_count: 1 })
  t.match((await api('GET', `/demo/discussions/${back.json().number}`)).json().comments, [{ body: 'Another thing.', moved_from: { discussion: other.number, comment: 1 } }])
})

t.test('what a split refuses: the opening post, a note, no such comment, a merged, deleted or spam discussion, a bad body, who may not', async (t) => {
  const { app, api, create, ann } = await discussionApp(t)
  const one = await create({ title: 'One' })
  t.equal((await api('POST', `/demo/discussions/${one.number}/comments`, { body: 'A note.', internal: true })).statusCode, 201)
  const refused = async (body: unknown, status: number, number = one.number, headers = ann.bearer) => {
    const res = await api('POST', `/demo/discussions/${number}/split`, body, headers)
    t.equal(res.statusCode, status, `${JSON.stringify(body)}: ${res.body}`)
    return String(res.headers['content-type']).includes('json') ? res.json() : res.body
  }
  t.match(await refused({ comment: 1 }, 400), { fields: [{ field: 'comment', problem: /opening post/ }] })
  t.match(await refused({ comment: 2 }, 400), { fields: [{ field: 'comment', problem: /internal note/ }] })
  t.match(await refused({ comment: 9 }, 404), { message: 'Discussion 1 has no comment 9.' })
  await refused({ comment: 0 }, 400)
  await refused({ comment: '2' }, 400)
  await refused({ comment: 2, title: '   ' }, 400)
  await refused({ comment: 2, extra: true }, 400)
  await refused({ comment: 2 }, 404, 99)
  const reader = await supporterWithToken(app, { email: 'reader@example.test', access: 'read' })
  await refused({ comment: 2 }, 403, one.number, reader.bearer)
  const two = await create({ title: 'Two' })
  t.equal((await api('POST', `/demo/discussions/${two.number}/comments`, { body: 'Public.' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${two.number}/merge`, { into: one.number })).statusCode, 200)
  t.match(await refused({ comment: 2 }, 409, two.number), { message: /was merged into discussion 1: it cannot be split/ })
  t.equal((await api('GET', `/demo/discussions/${one.number}`)).json().comments_count, 4, 'nothing moved by a refusal')
})

t.test('a split on the page: to the new discussion, which says where it came from', onSqlite("the split form and the new discussion's page"), async (t) => {
  const { app, api, create } = await discussionApp(t)
  const d = await create({ title: 'Two questions', body: 'First question.', author_email: 'carol@example.test' })
  t.equal((await api('POST', `/demo/discussions/${d.number}/comments`, { body: 'Second question.', author_email: 'carol@example.test' })).statusCode, 201)
  const { web } = await signedInPerson(app)
  t.match((await web.get(`/demo/discussions/${d.number}`)).body, /data-split-form/)
  const none = await web.post(`/demo/discussions/${d.number}/split`, { comment: 'two' })
  t.equal(none.statusCode, 400)
  t.match(none.body, /give the number of the comment/)
  const opening = await web.post(`/demo/discussions/${d.number}/split`, { comment: '1' })
  t.equal(opening.statusCode, 400)
  t.match(opening.body, /the opening post, which stays/)
  const made = await web.post(`/demo/discussions/${d.number}/split`, { comment: '2', following: 'yes', title: '  Second one  ' })
  t.equal(made.statusCode, 303)
  t.equal(made.headers.location, `https://help.example.test/demo/discussions/${d.number + 1}?done=split`)
  const page = (await web.get(made.headers.location as string)).body
  t.match(page, /<h1>Second one<\/h1>/)
  t.match(page, new RegExp(`data-split-from><a href="https://help.example.test/demo/discussions/${d.number}">Discussion #${d.number}</a>`))
  t.match(page, /Second question\./)
  t.match((await web.get(`/demo/discussions/${d.number}`)).body, new RegExp(`Split into discussion #${d.number + 1}: Second one`))
})

t.test('a merge that fails at its last step leaves nothing half-written: both discussions as they were', async (t) => {
  const { app, api, create, ann } = await discussionApp(t)
  const one = await create({ title: 'One', author_email: 'carol@example.test' })
  const two = await create({ title: 'Two' })
  t.equal((await api('POST', `/demo/discussions/${one.number}/participants`, { email: 'boss@example.test' })).statusCode, 201)
  // The target's change is told last: a sink that fails there fails the merge after every row moved.
  const failing = app.database.merges(app.clock, app.secretBox, async (_tx, event) => {
    if (event.type === 'discussion.updated') throw new Error('the connection ended')
  })
  const by = { id: ann.user.id, name: ann.user.email, via: 'api' as const }
  await t.rejects(failing.merge(ann.site.id, one.number, two.number, by), { message: 'the connection ended' })
  const shown = (await api('GET', `/demo/discussions/${one.number}`)).json()
  t.match(shown, { state: 'new', merged_into: null, comments_count: 1, comments: [{ number: 1, moved_from: null }] })
  t.match((await api('GET', `/demo/discussions/${two.number}`)).json(), { comments_count: 1 })
  t.same((await api('GET', `/demo/discussions/${two.number}/participants`)).json().participants, [], 'no participant joined')
  t.same((await api('GET', '/demo/changes')).json().changes.filter((c: { type: string }) => c.type === 'discussion.merged'), [], 'nothing told')
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number })).statusCode, 200, 'and it can be merged after')
})
