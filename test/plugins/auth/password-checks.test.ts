import t from 'tap'
import { createPasswordChecks } from '../../../plugins/auth/password-checks.ts'
import { hashPassword } from '../../../lib/password.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('at most `concurrency` run at once, at most `queue` wait, in order; the rest are busy', async (t) => {
  const started: string[] = []
  let running = 0
  let most = 0
  const release: Array<() => void> = []
  const checks = createPasswordChecks({
    concurrency: 2,
    queue: 3,
    verify: async (_hash, password) => {
      started.push(password)
      most = Math.max(most, ++running)
      await new Promise<void>((resolve) => release.push(resolve))
      running--
      return password === 'p1'
    },
  })
  const results = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'].map((p) => checks.check('hash', p))
  await new Promise((resolve) => setImmediate(resolve))
  t.same(started, ['p1', 'p2'], 'two run')
  t.equal(checks.running, 2)
  t.equal(checks.waiting, 3, 'three wait')
  t.equal(await results[5], 'busy', 'the sixth is turned away at once')
  t.equal(await results[6], 'busy')
  while (release.length > 0 || checks.running > 0) {
    release.shift()?.()
    await new Promise((resolve) => setImmediate(resolve))
  }
  t.same(await Promise.all(results.slice(0, 5)), [true, false, false, false, false])
  t.same(started, ['p1', 'p2', 'p3', 'p4', 'p5'], 'the waiting ran in the order they came')
  t.equal(most, 2, 'never more than two at once')
  t.equal(checks.running, 0, 'every slot is given back')
  t.equal(checks.waiting, 0)
})

t.test('a failing verifier still gives its slot back', async (t) => {
  const checks = createPasswordChecks({ concurrency: 1, queue: 0, verify: async () => Promise.reject(new Error('boom')) })
  await t.rejects(checks.check('hash', 'x'), { message: 'boom' })
  t.equal(checks.running, 0)
})

t.test('argon2 by default', async (t) => {
  const checks = createPasswordChecks({ concurrency: 1, queue: 1 })
  const hash = await hashPassword('correct horse')
  t.equal(await checks.check(hash, 'correct horse'), true)
  t.equal(await checks.check(hash, 'wrong horse'), false)
})
