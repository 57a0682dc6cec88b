import t from 'tap'
import { onFirstUse } from '../../db/port.ts'

// Engines: one: a pure function of the port (db/port.ts, onFirstUse); every store's statements it builds run in both passes.
// Which stores build their statements this way is test/house/stores.test.ts's to check.

// A method that reads its own object, as drizzle's prepared queries do.
class Prepared {
  prefix = 'row of'
  execute(values: { id: number }) {
    return `${this.prefix} ${values.id}`
  }
}

t.test('a statement is built at its first execution, once, and runs as built', async (t) => {
  let builds = 0
  const statement = onFirstUse(() => {
    builds++
    return new Prepared()
  })
  t.equal(builds, 0, 'nothing is built before it runs')
  t.equal(statement.execute({ id: 1 }), 'row of 1', 'it runs with what it is given, on the statement it built')
  t.equal(statement.execute({ id: 2 }), 'row of 2')
  t.equal(builds, 1, 'built once')
})

