import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'

// Engines: one: the command's words and refusals; every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-05; the switch refused without a provider in test/db/stores/sign-in-providers.test.ts).
// A site's identity providers on the command line (cli/sign-in-providers.ts; issue 73): added,
// listed and removed as the API has them, the secret from standard input and never printed; the
// operator's `site policy --company-sign-in-only off` is the way back in.

t.test('sign-in-provider add, list and remove; the switch of the company account only; refusals write nothing', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['site', 'add', 'other'])).code, 0)
  const secret = { stdin: 'GOCSPX-secret-of-acme\n' }

  const added = await cli.run(['sign-in-provider', 'add', 'acme', 'Acme', '--kind', 'microsoft', '--tenant', 'acme.onmicrosoft.com', '--client-id', 'c-1', '--domain', 'acme.example', '--domain', 'acme.org', '--role', 'collaborator', '--trust-mfa'], secret)
  t.equal(added.code, 0, added.stderr)
  t.equal(added.stdout, 'sign-in provider 1 of acme: 1\tAcme\tmicrosoft\thttps://login.microsoftonline.com/acme.onmicrosoft.com/v2.0\tc-1\tacme.example,acme.org\tcollaborator\ttrusts its mfa\n')
  t.notMatch(added.stdout + added.stderr, /GOCSPX/, 'the secret is never printed')
  t.equal((await cli.run(['sign-in-provider', 'list', 'acme'])).stdout, added.stdout.slice('sign-in provider 1 of acme: '.length))
  t.equal((await cli.run(['sign-in-provider', 'list', 'other'])).stdout, '', "another site's list is its own")

  for (const [args, words, options] of [
    [['sign-in-provider', 'add', 'acme', 'X', '--client-id', 'c'], '--kind is one of google, microsoft, oidc', secret],
    [['sign-in-provider', 'add', 'acme', 'X', '--kind', 'google'], '--client-id', secret],
    [['sign-in-provider', 'add', 'acme', 'X', '--kind', 'google', '--client-id', 'c'], 'give the client secret on standard input', {}],
    [['sign-in-provider', 'add', 'acme', 'X', '--kind', 'microsoft', '--tenant', 'common', '--client-id', 'c'], 'not "common"', secret],
    [['sign-in-provider', 'add', 'acme', 'X', '--kind', 'oidc', '--issuer', 'http://sso.example.com', '--client-id', 'c'], 'https', secret],
    [['sign-in-provider', 'add', 'acme', 'X', '--kind', 'google', '--client-id', 'c', '--role', 'owner'], '--role is supporter or collaborator, not "owner"', secret],
    [['sign-in-provider', 'add', 'acme', 'Acme', '--kind', 'google', '--client-id', 'c'], 'named Acme already', secret],
    [['sign-in-provider', 'remove', 'acme', 'one'], 'a provider id is a number, not "one"', {}],
    [['sign-in-provider', 'remove', 'other', '1'], 'this site has no sign-in provider 1', {}],
  ] as const) {
    const refused = await cli.run([...args], options)
    t.not(refused.code, 0, args.join(' '))
    t.match(refused.stderr, words, args.join(' '))
  }
  t.equal((await cli.run(['sign-in-provider', 'list', 'acme'])).stdout.split('\n').length - 1, 1, 'nothing written by a refusal')

  // The operator may switch the company's account only on (no administrator to have signed in), and off: the way back in.
  t.match((await cli.run(['site', 'policy', 'acme', '--company-sign-in-only', 'on'])).stdout, /company_sign_in_only\ton/)
  t.match((await cli.run(['sign-in-provider', 'remove', 'acme', '1'])).stderr, /only sign-in provider while its staff sign in with the company's account only/)
  t.match((await cli.run(['site', 'policy', 'other', '--company-sign-in-only', 'on'])).stderr, /add the company's identity provider first/)
  t.match((await cli.run(['site', 'policy', 'acme', '--company-sign-in-only', 'off'])).stdout, /company_sign_in_only\toff/)
  t.equal((await cli.run(['sign-in-provider', 'remove', 'acme', '1'])).stdout, 'sign-in provider 1 (Acme) of acme removed\n')
  t.equal((await cli.run(['sign-in-provider', 'list', 'acme'])).stdout, '')
})
