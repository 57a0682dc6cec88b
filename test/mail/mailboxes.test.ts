import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'

// The sites' mailboxes on the command line (cli/mailboxes.ts), on the engine the suite runs on.

t.test('mailbox add, list and remove; an address belongs to one site; bad input is refused with nothing written', async (t) => {
  const cli = cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['site', 'add', 'other'])).code, 0)
  const category = /^category (\d+) created/.exec((await cli.run(['category', 'add', 'acme', 'Mail'])).stdout)![1]!

  const added = await cli.run(['mailbox', 'add', 'acme', 'Support@Acme.Example'])
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^mailbox support@acme\.example added to acme; mail reaches it through the receiver/)
  t.equal((await cli.run(['mailbox', 'add', 'acme', 'billing@acme.example', '--category', category])).code, 0)
  t.equal((await cli.run(['mailbox', 'list', 'acme'])).stdout, `support@acme.example\tfirst category\nbilling@acme.example\t${category}\n`)

  const taken = await cli.run(['mailbox', 'add', 'other', 'SUPPORT@acme.example'])
  t.not(taken.code, 0)
  t.match(taken.stderr, 'support@acme.example is already the address of a mailbox')
  for (const [args, words] of [
    [['mailbox', 'add', 'acme', 'not an address'], '"not an address" is not a mail address'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--category', '2'], 'there is no category 2 on this site'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--category', 'two'], '--category must be a category id, not "two"'],
    [['mailbox', 'add', 'nowhere', 'x@acme.example'], 'nowhere'],
    [['mailbox', 'remove', 'acme', 'nobody@acme.example'], 'acme has no mailbox nobody@acme.example'],
  ] as const) {
    const refused = await cli.run([...args])
    t.not(refused.code, 0, args.join(' '))
    t.match(refused.stderr, words)
  }
  t.equal((await cli.run(['mailbox', 'list', 'other'])).stdout, '', 'nothing written for the other site')

  const removed = await cli.run(['mailbox', 'remove', 'acme', ' Billing@Acme.Example '])
  t.equal(removed.stdout, 'mailbox billing@acme.example removed from acme\n')
  t.equal((await cli.run(['mailbox', 'list', 'acme'])).stdout, 'support@acme.example\tfirst category\n')
})
