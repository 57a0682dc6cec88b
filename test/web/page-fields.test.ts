import t from 'tap'
import { queryString, wholeNumber } from '../../routes/web/pages.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a whole number from a field: from 1, at most the digits given, nothing else', async (t) => {
  t.equal(wholeNumber('1', 9), 1)
  t.equal(wholeNumber('123456789', 9), 123_456_789)
  for (const field of ['1234567890', '0', '01', '-1', '1.5', '1e3', ' 1', '', '١']) t.equal(wholeNumber(field, 9), undefined, JSON.stringify(field))
  for (const field of [undefined, 7, ['1'], { page: '1' }]) t.equal(wholeNumber(field, 9), undefined, typeof field)
  t.equal(wholeNumber('9999999999999999', 16), 9_999_999_999_999_999)
})

t.test('a query string of the parameters with a value, encoded', async (t) => {
  t.equal(queryString({}), '')
  t.equal(queryString({ a: undefined, b: '' }), '', 'nothing with a value: no question mark')
  t.equal(queryString({ state: 'open', page: 2, q: 'a b&c' }), '?state=open&page=2&q=a+b%26c')
})
