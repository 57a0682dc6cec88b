import t from 'tap'
import { moment } from '../../routes/api/discussions/views.ts'

t.test('moments are ISO 8601 in UTC to the second', async (t) => {
  t.equal(moment(new Date('2026-03-01T12:00:00.123Z')), '2026-03-01T12:00:00Z')
  t.equal(moment(new Date(0)), '1970-01-01T00:00:00Z')
  t.equal(moment(new Date('+012026-03-01T12:00:00.999Z')), '+012026-03-01T12:00:00Z', 'a year past 9999 keeps its longer form')
})
