import t from 'tap'
import { unavailableStore } from '../../lib/database-errors.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('locked, full and unwritable files are 503 with a Retry-After; anything else is not', async (t) => {
  const answer = (code: unknown) => unavailableStore(Object.assign(new Error('x'), { code }))
  t.match(answer('SQLITE_BUSY'), { code: 'SQLITE_BUSY', retryAfter: 1, body: { error: 'service_unavailable', message: /busy/ } })
  t.match(answer('SQLITE_BUSY_SNAPSHOT'), { code: 'SQLITE_BUSY_SNAPSHOT', retryAfter: 1 }, 'an extended code is answered as its primary one')
  t.match(answer('SQLITE_LOCKED_SHAREDCACHE'), { retryAfter: 1 })
  t.match(answer('SQLITE_FULL'), { retryAfter: 60, body: { message: /out of storage space/ } })
  t.match(answer('SQLITE_IOERR_WRITE'), { retryAfter: 60 })
  t.match(answer('SQLITE_READONLY_DBMOVED'), { retryAfter: 60 })
  for (const code of ['SQLITE_CORRUPT', 'SQLITE_CONSTRAINT_UNIQUE', 'FST_ERR_CTP_BODY_TOO_LARGE', 42, undefined]) {
    t.equal(answer(code), null, String(code))
  }
  t.equal(unavailableStore(null), null)
  t.equal(unavailableStore('SQLITE_BUSY'), null, 'only errors carry a code')
})
