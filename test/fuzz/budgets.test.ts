import fc from 'fast-check'
import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { basic } from '../fixtures/credentials.ts'
import { runs } from './harness.ts'

// Engines: both: attempts at once on one database reserve the failure budgets, and PostgreSQL runs them in transactions side by side where SQLite runs them one after another.
// Issue 13, item 2, as a property: whatever mix of attempts arrives at once (wrong and right
// passwords for a few accounts, wrong and right tokens, from a few addresses), no budget is
// overrun: per address at most `perAddress` guesses are answered 401, per account at most
// `perAccount` wrong passwords are compared (since its last right one, which clears its failures),
// and everything else is 200 or 429. The same email and password sent again from the same address
// while they are being checked is the same guess: it waits for that check and gets its answer
// (plugins/auth/password-verifier.ts), so it is counted once here too.

const limits = { perAddress: 4, perAccount: 2, windowSeconds: 60 }
const ACCOUNTS = ['a@example.test', 'b@example.test', 'c@example.test']
const RIGHT = 'the right password'

const attempt = fc.record({
  address: fc.constantFrom('192.0.2.1', '192.0.2.2', '192.0.2.3'),
  credential: fc.oneof(
    fc.record({ kind: fc.constant('password' as const), account: fc.constantFrom(...ACCOUNTS), right: fc.boolean() }),
    fc.record({ kind: fc.constant('token' as const), right: fc.boolean() }),
  ),
})

t.test('attempts sent at once never overrun a budget', async (t) => {
  const { app, clock } = await buildTestApp(t, { config: { limits } })
  const ann = await supporterWithToken(app)
  const wrongToken = ann.value.slice(0, -1) + (ann.value.endsWith('A') ? 'B' : 'A')
  const hashes = new Map<string, string>()
  for (const email of ACCOUNTS) {
    const user = await app.users.insert({ email }, `hash-of-${email}`)
    await app.users.addStaff(1, user.id)
    hashes.set(`hash-of-${email}`, email)
  }
  // Every wrong password compared, in order, by account.
  const compared: { email: string; seq: number }[] = []
  let seq = 0
  app.passwordChecks.verify = async (hash, password) => {
    if (password !== RIGHT) compared.push({ email: hashes.get(hash) ?? 'decoy', seq: ++seq })
    await new Promise((resolve) => setImmediate(resolve))
    return hashes.has(hash) && password === RIGHT
  }
  // A right password clears the failures counted before it began (by design: a remembered one
  // too, which never reaches the verifier above), so the count starts again from there: only the
  // wrong passwords compared since its check began still count for that account.
  const counted = app.authLimits.attempt
  app.authLimits.attempt = (keys, check, outcome) =>
    counted(
      keys,
      async () => {
        const began = seq
        const result = await check()
        if (keys.account !== undefined && outcome(result) === 'succeeded') {
          // The account's key is its email key: the addresses here are already lower case.
          for (let i = compared.length - 1; i >= 0; i--) if (compared[i].email === keys.account && compared[i].seq <= began) compared.splice(i, 1)
        }
        return result
      },
      outcome,
    )

  await fc.assert(
    fc.asyncProperty(fc.array(attempt, { minLength: 1, maxLength: 40 }), async (batch) => {
      // A fresh window for every batch.
      clock.advance(limits.windowSeconds * 1000)
      compared.length = 0
      const answers = await Promise.all(
        batch.map(({ address, credential }) => {
          const headers =
            credential.kind === 'token'
              ? { authorization: `Bearer ${credential.right ? ann.value : wrongToken}` }
              : basic(credential.account, credential.right ? RIGHT : 'a wrong guess')
          return app.inject({ url: '/demo', headers, remoteAddress: address })
        }),
      )
      // Per address, the guesses answered 401: each wrong token, and each account's wrong password once.
      const refusedPerAddress = new Map<string, Set<string>>()
      answers.forEach((res, i) => {
        if (![200, 401, 429].includes(res.statusCode)) throw new Error(`answer ${res.statusCode}: ${res.body}`)
        const { address, credential } = batch[i]
        const guess = credential.kind === 'token' ? `token ${i}` : `password of ${credential.account}`
        if (res.statusCode === 401) refusedPerAddress.set(address, (refusedPerAddress.get(address) ?? new Set()).add(guess))
        if (res.statusCode === 200 && !credential.right) throw new Error('a wrong credential was accepted')
      })
      for (const [address, guesses] of refusedPerAddress) if (guesses.size > limits.perAddress) throw new Error(`${address}: ${guesses.size} failures answered`)
      for (const email of ACCOUNTS) {
        const n = compared.filter((one) => one.email === email).length
        if (n > limits.perAccount) throw new Error(`${email}: ${n} wrong passwords compared`)
      }
    }),
    runs(60),
  )
  t.pass('no budget was overrun')
})
