import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
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
  t.match((await cli.run(['reports', 'rebuild', 'acme'])).stdout, 'reports of acme made again from 0 discussions\n')
  const unknown = await cli.run(['reports', 'show', 'acme', 'happiness'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /there are volume, first_reply, resolution, sla, satisfaction/)
  const by = await cli.run(['reports', 'show', 'acme', 'volume', '--by', 'hour'])
  t.equal(by.code, 2)
  t.match(by.stderr, /--by must be one of day, week, month/)
  t.not((await cli.run(['reports', 'show', 'nowhere', 'volume'])).code, 0, 'an unknown site')
})
