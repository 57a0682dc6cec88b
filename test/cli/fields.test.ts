import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'

// Engines: one: the fields command's words and refusals; every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-05).
// A site's custom fields on the command line (cli/fields.ts; issue 72): added, listed and removed
// as the API has them; a refusal changes nothing and says why.

t.test('field add, list and remove; bad input is refused with nothing written', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['site', 'add', 'other'])).code, 0)

  const plan = await cli.run(['field', 'add', 'acme', 'plan', 'Plan', '--kind', 'choice', '--choice', 'Basic', '--choice', 'Pro', '--audience', 'customers', '--required'])
  t.equal(plan.code, 0, plan.stderr)
  t.equal(plan.stdout, 'field 1 of acme: 1\tplan\tchoice\tdiscussion\tcustomers\trequired\tBasic,Pro\tPlan\t-\n')
  t.equal((await cli.run(['field', 'add', 'acme', 'order_number', 'Order number', '--kind', 'text'])).code, 0)
  t.equal((await cli.run(['field', 'list', 'acme'])).stdout, '1\tplan\tchoice\tdiscussion\tcustomers\trequired\tBasic,Pro\tPlan\t-\n2\torder_number\ttext\tdiscussion\tteam\toptional\t-\tOrder number\t-\n')
  t.equal((await cli.run(['field', 'list', 'other'])).stdout, '', "another site's list is its own")

  for (const [args, words] of [
    [['field', 'add', 'acme', 'seats', 'Seats'], '--kind is one of text, number, date, choice, choices, yes_no, link'],
    [['field', 'add', 'acme', 'seats', 'Seats', '--kind', 'integer'], '--kind is one of'],
    [['field', 'add', 'acme', 'seats', 'Seats', '--kind', 'number', '--audience', 'everyone'], '--audience is team or customers, not "everyone"'],
    [['field', 'add', 'acme', 'Seats', 'Seats', '--kind', 'number'], 'must be lower-case letters, digits and _'],
    [['field', 'add', 'acme', 'plan', 'Plan again', '--kind', 'text'], 'which a field of this site has'],
    [['field', 'add', 'acme', 'tier', 'Tier', '--kind', 'choice'], 'choices must be 1 to 100'],
    [['field', 'add', 'acme', 'seats', 'Seats', '--kind', 'number', '--choice', 'One'], 'choices are for the kinds choice and choices, not number'],
    [['field', 'remove', 'acme', 'one'], 'a field id is a number, not "one"'],
    [['field', 'add', 'acme', 'size', 'Size', '--kind', 'number', '--of', 'ticket'], '--of is discussion or customer, not "ticket"'],
    [['field', 'add', 'acme', 'size', 'Size', '--kind', 'number', '--of', 'customer', '--audience', 'customers'], "audience is the team's for a field of customers"],
    [['field', 'remove', 'other', '1'], 'there is no field 1 on this site'],
    [['field', 'add', 'nowhere', 'seats', 'Seats', '--kind', 'number'], 'nowhere'],
  ] as const) {
    const refused = await cli.run([...args])
    t.not(refused.code, 0, args.join(' '))
    t.match(refused.stderr, words, args.join(' '))
  }
  t.equal((await cli.run(['field', 'list', 'acme'])).stdout.split('\n').length - 1, 2, 'nothing written by a refusal')

  t.equal((await cli.run(['field', 'remove', 'acme', '2'])).stdout, 'field 2 of acme removed\n')
  t.equal((await cli.run(['field', 'list', 'acme'])).stdout, '1\tplan\tchoice\tdiscussion\tcustomers\trequired\tBasic,Pro\tPlan\t-\n')
  t.match((await cli.run(['field', 'list', 'acme', '--removed'])).stdout, /\n2\torder_number\ttext\tdiscussion\tteam\toptional\t-\tOrder number\tremoved \d{4}-\d\d-\d\dT/, 'listed as removed when asked')
  const [row] = await cli.query<{ action: string; target: string; actor: string; via: string }>("SELECT action, target, actor, via FROM audit_events WHERE action = 'field.removed'")
  t.match(row, { action: 'field.removed', target: 'order_number', actor: 'the operator', via: 'cli' }, 'each write a line of the record, by the operator')
})
