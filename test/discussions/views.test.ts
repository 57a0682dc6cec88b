import fc from 'fast-check'
import t from 'tap'
import { moment } from '../../routes/api/discussions/views.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

const reference = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z')

t.test('moments are ISO 8601 in UTC to the second', async (t) => {
  t.equal(moment(new Date('2026-03-01T12:00:00.123Z')), '2026-03-01T12:00:00Z')
  t.equal(moment(new Date(0)), '1970-01-01T00:00:00Z')
  t.equal(moment(new Date('2024-02-29T23:59:59.999Z')), '2024-02-29T23:59:59Z', 'a leap day, the last second')
  t.equal(moment(new Date('2000-03-01T00:00:00Z')), '2000-03-01T00:00:00Z', 'the first day of a 400-year era')
  t.equal(moment(new Date('9999-12-31T23:59:59.999Z')), '9999-12-31T23:59:59Z')
  t.equal(moment(new Date('+010000-01-01T00:00:00Z')), '+010000-01-01T00:00:00Z', 'past 9999: the longer form')
  t.equal(moment(new Date('1969-12-31T23:59:59Z')), '1969-12-31T23:59:59Z', 'before 1970: toISOString')
})

t.test('the same text as toISOString for any moment', async () => {
  fc.assert(
    fc.property(fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }), (date) => moment(date) === reference(date)),
    { numRuns: 20_000 },
  )
})
