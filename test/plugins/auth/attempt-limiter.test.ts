import t from 'tap'
import { createAttemptLimiter } from '../../../plugins/auth/attempt-limiter.ts'
import { START, testClock } from '../../fixtures/clock.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a key is refused after max failures until its window ends', async (t) => {
  const clock = testClock()
  const limiter = createAttemptLimiter({ max: 3, windowMs: 60_000, clock })
  for (let i = 0; i < 3; i++) {
    t.same(limiter.check(['account:a', 'ip:1']), { allowed: true, retryAfter: 0 })
    limiter.fail(['account:a', 'ip:1'])
  }
  t.same(limiter.check(['account:a']), { allowed: false, retryAfter: 60 })
  t.same(limiter.check(['ip:1', 'account:b']), { allowed: false, retryAfter: 60 }, 'any blocked key blocks')
  t.same(limiter.check(['account:b', 'ip:2']), { allowed: true, retryAfter: 0 }, 'other keys are free')
  clock.advance(59_500)
  t.same(limiter.check(['account:a']), { allowed: false, retryAfter: 1 }, 'rounded up to whole seconds')
  clock.advance(500)
  t.same(limiter.check(['account:a']), { allowed: true, retryAfter: 0 }, 'the window has ended')
  limiter.fail(['account:a'])
  t.same(limiter.check(['account:a']), { allowed: true, retryAfter: 0 }, 'a new window starts at one failure')
})

t.test('a success clears the failures', async (t) => {
  const limiter = createAttemptLimiter({ max: 2, windowMs: 60_000, clock: testClock() })
  limiter.fail(['k'])
  t.equal(limiter.succeed(['k']), true, 'it had some')
  t.equal(limiter.succeed(['k', 'other']), false, 'none left to clear')
  limiter.fail(['k'])
  t.equal(limiter.check(['k']).allowed, true)
  limiter.fail(['k'])
  t.equal(limiter.check(['k']).allowed, false)
})

t.test('memory is bounded: the oldest keys are forgotten', async (t) => {
  const limiter = createAttemptLimiter({ max: 1, windowMs: 60_000, clock: testClock(), maxKeys: 2 })
  limiter.fail(['a'])
  limiter.fail(['b'])
  limiter.fail(['c'])
  t.equal(limiter.check(['a']).allowed, true, 'a was forgotten')
  t.equal(limiter.check(['b']).allowed, false)
  t.equal(limiter.check(['c']).allowed, false)
})

t.test('reservations: taken before the check, at most max at once, given back when the check succeeds', async (t) => {
  const clock = testClock()
  const limiter = createAttemptLimiter({ max: 2, windowMs: 60_000, clock })
  const first = limiter.reserve('k')
  const second = limiter.reserve('k')
  t.ok(first.allowed && second.allowed)
  t.same(limiter.reserve('k'), { allowed: false, retryAfter: 1 }, 'two in flight fill a budget of two, for as long as they run')
  t.same(limiter.status('k'), { limit: 2, remaining: 0, resetAt: START + 60_000, resetSeconds: 60 })
  if (first.allowed) {
    first.release()
    first.release()
  }
  t.same(limiter.status('k').remaining, 1, 'given back once, however often released')
  const third = limiter.reserve('k')
  t.ok(third.allowed, 'the place given back is taken again')
  if (second.allowed) second.release()
  if (third.allowed) third.release()
  t.same(limiter.status('k'), { limit: 2, remaining: 2, resetAt: START + 60_000, resetSeconds: 60 }, 'every place given back, nothing counted')
})

t.test('a failed reservation counts as a failure; a spent budget waits for its window', async (t) => {
  const clock = testClock()
  const limiter = createAttemptLimiter({ max: 2, windowMs: 60_000, clock })
  for (let i = 0; i < 2; i++) {
    const attempt = limiter.reserve('k')
    if (attempt.allowed) {
      attempt.fail()
      attempt.fail()
    }
  }
  t.same(limiter.status('k'), { limit: 2, remaining: 0, resetAt: START + 60_000, resetSeconds: 60 }, 'each failed once, however often told')
  t.same(limiter.reserve('k'), { allowed: false, retryAfter: 60 })
  t.equal(limiter.check(['k']).allowed, false)
})

t.test('a successful reservation clears only the failures counted before it was taken', async (t) => {
  const clock = testClock()
  const limiter = createAttemptLimiter({ max: 3, windowMs: 60_000, clock })
  limiter.fail(['k'])
  const right = limiter.reserve('k')
  const beside = limiter.reserve('k')
  if (!right.allowed || !beside.allowed) throw new Error('both attempts fit the budget')
  beside.fail()
  t.equal(right.succeed(), true, 'it cleared the failure before it')
  t.equal(right.succeed(), false, 'settled once, however often told')
  t.equal(limiter.status('k').remaining, 2, 'the failure beside it stays counted')

  const alone = limiter.reserve('fresh')
  t.equal(alone.allowed && alone.succeed(), false, 'nothing to clear: nothing to tell')

  const late = limiter.reserve('k')
  clock.advance(60_000)
  limiter.fail(['k'])
  t.equal(late.allowed && late.succeed(), false, 'its window has ended: the new one is not its to clear')
  t.equal(limiter.status('k').remaining, 2, 'the new window keeps its failure')
})
