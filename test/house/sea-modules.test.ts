import t from 'tap'
import * as checkout from '../../db/drizzle.ts'
import * as executable from '../../tools/build/sea/drizzle.ts'
import * as postgresCheckout from '../../db/drizzle-postgres.ts'
import * as postgresExecutable from '../../tools/build/sea/postgres-drizzle.ts'
import * as packagesCheckout from '../../lib/packages.ts'
import * as packagesExecutable from '../../tools/build/sea/packages.ts'

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

t.test('the two doors to the packages taken at first use offer the same names, and the same packages', async (t) => {
  t.same(Object.keys(packagesExecutable).sort(), Object.keys(packagesCheckout).sort())
  for (const name of Object.keys(packagesCheckout) as Array<keyof typeof packagesCheckout>) {
    // The executable's luxon is its ES build, the checkout's its CommonJS one: the same export, by its name.
    t.equal(packagesExecutable[name]().name, packagesCheckout[name]().name, `${name}: the same export of the same package`)
  }
})
