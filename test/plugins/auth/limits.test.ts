import t from 'tap'
import { createAuthLimits, DEFAULT_LIMITS, type BudgetEvent } from '../../../plugins/auth/limits.ts'
import { testClock } from '../../fixtures/clock.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a check that throws gives its reservations back and the error goes on', async (t) => {
  const limits = createAuthLimits(DEFAULT_LIMITS, testClock())
  const broken = limits.attempt({ address: 'a', account: 'x' }, () => {
    throw new Error('the database is gone')
  }, () => 'failed')
  await t.rejects(broken, { message: 'the database is gone' })
  t.equal(limits.addresses.status('a').remaining, DEFAULT_LIMITS.perAddress, 'nothing counted against the address')
  t.equal(limits.accounts.status('x').remaining, DEFAULT_LIMITS.perAccount, 'nor against the account')
})

t.test('a spent account refuses before the check and gives the address its place back', async (t) => {
  const limits = createAuthLimits(DEFAULT_LIMITS, testClock())
  limits.accounts.fail(Array(DEFAULT_LIMITS.perAccount).fill('x'))
  let checked = false
  const result = await limits.attempt({ address: 'a', account: 'x' }, () => (checked = true), () => 'neutral')
  t.same(result, { kind: 'too_many_attempts', retryAfter: DEFAULT_LIMITS.windowSeconds })
  t.notOk(checked, 'the check never ran')
  t.equal(limits.addresses.status('a').remaining, DEFAULT_LIMITS.perAddress)
})

t.test('on its own (nothing shared), a failed check counts against the address and the account', async (t) => {
  const limits = createAuthLimits(DEFAULT_LIMITS, testClock())
  const result = await limits.attempt({ address: 'a', account: 'x' }, () => 'wrong', () => 'failed')
  t.equal(result, 'wrong')
  t.equal(limits.addresses.status('a').remaining, DEFAULT_LIMITS.perAddress - 1)
  t.equal(limits.accounts.status('x').remaining, DEFAULT_LIMITS.perAccount - 1, 'under the email key itself')
})

t.test('a right password does not clear a wrong one compared while it was being checked', async (t) => {
  const settings = { perAddress: 10, perAccount: 3, windowSeconds: 60 }
  const told: BudgetEvent[] = []
  const limits = createAuthLimits(settings, testClock(), { share: (event) => told.push(event) })
  const wrong = () => limits.attempt({ address: 'a', account: 'x' }, () => 'wrong', () => 'failed')
  await wrong()
  let answer!: () => void
  const right = limits.attempt({ address: 'b', account: 'x' }, () => new Promise<string>((resolve) => (answer = () => resolve('right'))), () => 'succeeded')
  t.equal(await wrong(), 'wrong', 'compared while the right one is checked')
  t.equal(limits.accounts.status('x').remaining, 0, 'two failures and the attempt in flight spend the budget')
  answer()
  t.equal(await right, 'right')
  t.equal(limits.accounts.status('x').remaining, 2, 'the failure before it is cleared, the one beside it stays')
  t.same(told.filter(([kind]) => kind === 'c'), [['c', 'x']], 'the clearing is told')
})
