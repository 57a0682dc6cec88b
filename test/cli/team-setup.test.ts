import t from 'tap'
import { NO_SITE_YET } from '../../cli/serve.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { startServer } from '../fixtures/server.ts'

// Engines: one: docs/operations.md's team set-up run as a team runs it; a real process on PostgreSQL runs in the test/multiprocess/ files. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 46: docs/operations.md's "Set up your team", run as a new team runs it: a production
// start without the demo site, then the site, its people and a first discussion through the API.

const V1 = 'application/vnd.service-v1+json'

t.test('set up your team: a start without a demo site, a site ready for its first discussion, people and their roles', async (t) => {
  const runner = await cliRunner(t)
  const server = await startServer(t, { ...runner.env, SERVICE_DEMO: 'off' })
  t.notMatch(server.output(), 'First run', 'no demo site, and no password in the log')
  for (let i = 0; i < 100 && !server.output().includes(NO_SITE_YET.trim()); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.match(server.output(), NO_SITE_YET.trim(), 'the start says what to do next')
  t.same(await runner.query('SELECT permalink FROM sites'), [], 'no site')

  const site = await runner.run(['site', 'add', 'acme', '--name', 'Acme Support'])
  t.match(site.stdout, 'with the category General (id 1)')
  const unknown = await runner.run(['staff', 'add', 'acme', 'bob@example.com', '--admin'])
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'service-desk: there is no user "bob@example.com"; make the account first: service-desk user add bob@example.com\n')
  t.equal((await runner.run(['user', 'add', 'bob@example.com', '--name', 'Bob'])).code, 0)
  t.equal((await runner.run(['staff', 'add', 'acme', 'bob@example.com', '--admin'])).stdout, 'bob@example.com is now support staff and an administrator of acme\n')

  // A token made at the command line reads unless asked to write: least access by default. (The
  // commands' clock is the server's, a real one, so the token is alive for it.)
  runner.clock.advance(Date.now() - runner.clock())
  const read = (await runner.run(['token', 'create', 'acme', 'bob@example.com', '--name', 'report'])).stdout.trim()
  const write = (await runner.run(['token', 'create', 'acme', 'bob@example.com', '--name', 'bridge', '--access', 'write'])).stdout.trim()
  const post = (token: string) =>
    fetch(`http://127.0.0.1:${server.port}/acme/categories/1/discussions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, accept: V1, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'The printer', body: 'It prints nothing.' }),
    })
  t.equal((await post(read)).status, 403, 'the default token reads only')
  const first = await post(write)
  t.equal(first.status, 201, 'the first discussion goes into the first category')
  t.equal(((await first.json()) as { number: number }).number, 1)
})
