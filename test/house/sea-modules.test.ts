import t from 'tap'
import * as checkout from '../../db/drizzle.ts'
import * as executable from '../../tools/build/sea/drizzle.ts'
import * as postgresCheckout from '../../db/drizzle-postgres.ts'
import * as postgresExecutable from '../../tools/build/sea/postgres-drizzle.ts'
import * as luxonCheckout from '../../lib/luxon.ts'
import * as luxonExecutable from '../../tools/build/sea/luxon.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The single executable swaps db/drizzle.ts for tools/build/sea/drizzle.ts: both must offer the
// same names, or the executable would find one missing only when it runs.
t.test('the two doors to drizzle offer the same names', async (t) => {
  t.same(Object.keys(executable).sort(), Object.keys(checkout).sort())
  for (const name of Object.keys(checkout)) t.type(executable[name as keyof typeof executable], typeof checkout[name as keyof typeof checkout], name)
})

t.test('the two doors to drizzle\'s PostgreSQL side offer the same names', async (t) => {
  t.same(Object.keys(postgresExecutable).sort(), Object.keys(postgresCheckout).sort())
  for (const name of Object.keys(postgresCheckout)) {
    t.type(postgresExecutable[name as keyof typeof postgresExecutable], typeof postgresCheckout[name as keyof typeof postgresCheckout], name)
  }
})

t.test('the two doors to luxon offer the same names, and the same DateTime', async (t) => {
  t.same(Object.keys(luxonExecutable).sort(), Object.keys(luxonCheckout).sort())
  t.equal(luxonExecutable.dateTime().fromISO('2026-12-06T10:00:00Z').toMillis(), luxonCheckout.dateTime().fromISO('2026-12-06T10:00:00Z').toMillis(), 'both read a moment alike')
})
