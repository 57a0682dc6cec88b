import t from 'tap'
import { buildTestApp, supporterWithToken, testClock } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { signedInPerson } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Issue 69, the reports page: the staff's only (a customer and a visitor are not shown it), a
// range it cannot show said on the page, the CSV of what it shows, and a name a stranger chose
// (a category's) escaped in the chart and the table.

t.test('the reports page: the staff only, its refusals said, its CSV, names escaped', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await signedInPerson(app)
  const api = await supporterWithToken(app, { email: ann.email })
  const hostile = await app.categories.add(ann.site.id, '<img src=x onerror=alert(1)>', true)
  const made = await app.inject({ method: 'POST', url: `/demo/categories/${hostile.id}/discussions`, headers: api.bearer, payload: { title: 'T', body: 'B', author_email: 'c@customer.test' } })
  t.equal(made.statusCode, 201)

  const page = await ann.web.get('/demo/reports?report=volume&by=category')
  t.equal(page.statusCode, 200)
  t.notMatch(page.body, /<img src=x/, 'the name is text, never markup')
  t.match(page.body, /&#60;img src=x onerror=alert\(1\)&#62;/)
  t.match(page.body, /<svg class="chart" role="img" aria-labelledby="report-chart-title report-chart-desc"/)

  const wrong = await ann.web.get('/demo/reports?from=2026-03-05&to=2026-03-01')
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, /<p class="alert" role="alert">“From” must not be after `to`\.<\/p>/)
  t.match(wrong.body, /value="2026-03-05"/, 'the form keeps what was asked')

  const csv = await ann.web.get('/demo/reports/csv?report=volume&by=category&from=2026-03-01&to=2026-03-01')
  t.equal(csv.statusCode, 200)
  t.equal(csv.headers['content-disposition'], 'attachment; filename="demo-volume-by-category-2026-03-01-2026-03-01.csv"')
  t.equal(csv.body, `key,label,created,resolved,reopened,replies\r\n${hostile.id},<img src=x onerror=alert(1)>,1,0,0,0\r\n,Total,1,0,0,0\r\n`)
  t.equal((await ann.web.get('/demo/reports/csv?by=hour')).statusCode, 400)

  // Every report draws its chart; an empty range draws none and says so.
  for (const report of ['volume', 'first_reply', 'resolution', 'sla', 'satisfaction']) {
    const shown = await ann.web.get(`/demo/reports?report=${report}&by=week`)
    t.equal(shown.statusCode, 200, report)
    t.match(shown.body, /<svg class="chart"/, `${report}: a chart`)
  }
  const none = await ann.web.get('/demo/reports?report=volume&by=supporter&from=2020-01-01&to=2020-01-31')
  t.match(none.body, /Nothing to show in these days\./)
  t.match((await ann.web.get('/demo/reports?report=volume&by=category&from=2020-01-01&to=2020-01-31')).body, /Nothing to show in these days\./)
  // A category removed keeps its figures, named by its id.
  const other = await app.categories.add(ann.site.id, 'Other', true)
  await app.discussions.removeCategory(ann.site.id, hostile.id, other.id)
  t.match((await ann.web.get('/demo/reports?report=volume&by=category')).body, new RegExp(`<th scope="row">Category ${hostile.id} \\(removed\\)</th>`))
  const tagged = await app.inject({ method: 'PUT', url: '/demo/discussions/1', headers: api.bearer, payload: { tags: ['billing'] } })
  t.equal(tagged.statusCode, 200)
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: api.bearer })
  t.match((await ann.web.get('/demo/reports?report=volume&by=tag')).body, /<th scope="row">billing<\/th>/, 'a tag is named as it is')

  // By a custom field of few values (issue 72): offered, its values the lines; another field refused in words.
  await app.fields.add(ann.site.id, { key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] }, { id: null, name: 'the operator', via: 'cli' })
  await app.fields.add(ann.site.id, { key: 'ref', name: 'Reference', kind: 'text' }, { id: null, name: 'the operator', via: 'cli' })
  t.equal((await app.inject({ method: 'PUT', url: '/demo/discussions/1', headers: api.bearer, payload: { fields: { plan: 'Pro' } } })).statusCode, 200)
  await app.inject({ method: 'POST', url: '/demo/discussions/1/unresolve', headers: api.bearer })
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: api.bearer })
  const byPlan = await ann.web.get('/demo/reports?report=volume&by=field.plan')
  t.equal(byPlan.statusCode, 200)
  t.match(byPlan.body, /<option value="field\.plan" selected>Field: Plan<\/option>/)
  t.notMatch(byPlan.body, /value="field\.ref"/, 'a text field is no breakdown')
  t.match(byPlan.body, /Volume by Plan, /)
  t.match(byPlan.body, /<th scope="row">Pro<\/th>/)
  // A choice written "true" is named as it is: Yes and No are a yes/no field's.
  await app.fields.add(ann.site.id, { key: 'flag', name: 'Flag', kind: 'choice', choices: ['true', 'false'] }, { id: null, name: 'the operator', via: 'cli' })
  t.equal((await app.inject({ method: 'PUT', url: '/demo/discussions/1', headers: api.bearer, payload: { fields: { flag: 'true' } } })).statusCode, 200)
  await app.inject({ method: 'POST', url: '/demo/discussions/1/unresolve', headers: api.bearer })
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: api.bearer })
  t.match((await ann.web.get('/demo/reports?report=volume&by=field.flag')).body, /<th scope="row">true<\/th>/)
  // A field removed since: still reported by, named by its key.
  const plan = (await app.fields.list(ann.site.id)).find((f) => f.key === 'plan')!
  await app.fields.remove(ann.site.id, plan.id, { id: null, name: 'the operator', via: 'cli' })
  t.match((await ann.web.get('/demo/reports?report=volume&by=field.plan')).body, /Volume by plan, /)
  const byRef = await ann.web.get('/demo/reports?report=volume&by=field.ref')
  t.equal(byRef.statusCode, 400)
  t.match(byRef.body, /“By” names ref, which is no field of this site&#39;s discussions of one choice, several choices or yes\/no\./)

  const customer = await signedInPerson(app, { role: 'customer' })
  const refused = await customer.web.get('/demo/reports')
  t.equal(refused.statusCode, 403)
  t.notMatch(refused.body, /Volume by/)
  t.equal((await customer.web.get('/demo/reports/csv')).statusCode, 403)
})

t.test('the command line: a report as CSV, the day rows made again; refusals are usage errors', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  const shown = await cli.run(['reports', 'show', 'acme', 'volume', '--by', 'month', '--from', '2026-01-01', '--to', '2026-02-15'])
  t.equal(shown.code, 0)
  t.equal(shown.stdout, 'key,label,created,resolved,reopened,replies\r\n2026-01-01,2026-01-01,0,0,0,0\r\n2026-02-01,2026-02-01,0,0,0,0\r\n,Total,0,0,0,0\r\n')
  t.match((await cli.run(['reports', 'rebuild', 'acme'])).stdout, 'reports of acme made again; discussions read: 0\n')
  const unknown = await cli.run(['reports', 'show', 'acme', 'happiness'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /there are volume, first_reply, resolution, sla, satisfaction/)
  const by = await cli.run(['reports', 'show', 'acme', 'volume', '--by', 'hour'])
  t.equal(by.code, 2)
  t.match(by.stderr, /--by must be one of day, week, month/)
  t.not((await cli.run(['reports', 'show', 'nowhere', 'volume'])).code, 0, 'an unknown site')
})

t.test('the weekly digest looks for itself every so often, and says when it cannot', async (t) => {
  const lines: string[] = []
  const { app, clock } = await buildTestApp(t, { clock: testClock(Date.parse('2026-11-09T07:00:00Z')), reportDigest: { everyMs: 50 }, logStream: { write: (line) => void lines.push(line) } })
  const ann = await signedInPerson(app, { administrator: true })
  await app.users.setNotifications(ann.site.id, ann.user.id, { newDiscussions: false, owned: true, digest: true })
  // The loop may have claimed this week already, before anyone asked: the next week's digest is Ann's.
  clock.advanceDays(7)
  const until = async (words: string) => {
    for (let i = 0; i < 100 && !lines.some((line) => line.includes(words)); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    return lines.find((line) => line.includes(words))
  }
  t.match(JSON.parse((await until('weekly digests of the reports queued'))!), { digests: 1 }, 'queued by the loop itself')
  app.reports.sendDigests = async () => {
    throw new Error('the database is away')
  }
  t.match(JSON.parse((await until('could not queue the weekly digests'))!), { level: 40, err: { message: 'the database is away' } }, 'a failure said, the loop going on')
})
