import t from 'tap'
import { createRememberedPasswords } from '../../../plugins/auth/remembered-passwords.ts'
import { testClock } from '../../fixtures/clock.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a success is remembered for its time, for its hash only', async (t) => {
  const clock = testClock()
  const remembered = createRememberedPasswords({ clock, ttlMs: 60_000 })
  t.notOk(remembered.has(remembered.id('ann@example.test', 'pw'), 'hash-1'))
  remembered.remember(remembered.id('ann@example.test', 'pw'), 'hash-1')
  t.ok(remembered.has(remembered.id('ann@example.test', 'pw'), 'hash-1'))
  t.notOk(remembered.has(remembered.id('ann@example.test', 'other'), 'hash-1'), 'another password')
  t.notOk(remembered.has(remembered.id('bob@example.test', 'pw'), 'hash-1'), 'another account')
  clock.advance(59_999)
  t.ok(remembered.has(remembered.id('ann@example.test', 'pw'), 'hash-1'), 'until the last millisecond')
  clock.advance(1)
  t.notOk(remembered.has(remembered.id('ann@example.test', 'pw'), 'hash-1'), 'then forgotten')
  t.equal(remembered.size, 0, 'and dropped')

  remembered.remember(remembered.id('ann@example.test', 'pw'), 'hash-1')
  t.notOk(remembered.has(remembered.id('ann@example.test', 'pw'), 'hash-2'), 'the password changed: the hash differs')
  t.equal(remembered.size, 0, 'dropped at once')
})

t.test('memory is bounded: the oldest are forgotten first', async (t) => {
  const remembered = createRememberedPasswords({ clock: testClock(), ttlMs: 60_000, max: 2 })
  remembered.remember(remembered.id('a', 'pw'), 'h')
  remembered.remember(remembered.id('b', 'pw'), 'h')
  remembered.remember(remembered.id('a', 'pw'), 'h')
  remembered.remember(remembered.id('c', 'pw'), 'h')
  t.equal(remembered.size, 2)
  t.notOk(remembered.has(remembered.id('b', 'pw'), 'h'), 'b was the oldest once a was remembered again')
  t.ok(remembered.has(remembered.id('a', 'pw'), 'h'))
  t.ok(remembered.has(remembered.id('c', 'pw'), 'h'))
})
