import t from 'tap'
import { ERASED, erasedAddress, monthsBefore, scrubbedJson, scrubberOf } from '../../lib/erasure.ts'

// Engines: one: pure functions of their text, no database.
// lib/erasure.ts: taking a person out of a text, as an erasure does to what the team wrote (issue 74).

t.test('a person is taken out of a text: address, whole name, each part, as whole words, in any case', async (t) => {
  const scrub = scrubberOf({ name: 'Ann-Marie O\u2019Neil de la Cruz', email: 'Ann.Marie@Customer.example' })
  t.equal(scrub('Hi Ann-Marie, write to ann.marie@customer.EXAMPLE.'), `Hi ${ERASED}, write to ${ERASED}.`)
  t.equal(scrub('ANN-MARIE O\u2019NEIL DE LA CRUZ called'), `${ERASED} called`, 'the whole name once')
  t.equal(scrub('Annual report for de la Cruz'), `Annual report for ${ERASED} ${ERASED} ${ERASED}`, 'a part is taken out, a longer word that starts with it is not')
  t.equal(scrub('Nothing of her here.'), 'Nothing of her here.')
  const carol = scrubberOf({ name: 'Zoë Ö. Quintessa', email: 'z@example.test' })
  t.equal(scrub('a (b) [c] *d* +e? $f^ |g|'), 'a (b) [c] *d* +e? $f^ |g|', 'signs of patterns in the text are text')
  t.equal(carol('Dear ZOË, Quintessa2 and Quintessa.'), `Dear ${ERASED}, Quintessa2 and ${ERASED}.`, 'letters beyond ASCII, numbers part of a word')
  t.equal(carol('Ö is one letter: kept'), 'Ö is one letter: kept', 'a part of one letter is left')
  const odd = scrubberOf({ name: '   ', email: 'x+(y)@example.test' })
  t.equal(odd('from x+(y)@example.test'), `from ${ERASED}`, 'an address with signs of patterns, a blank name')
})

t.test('the string values of a JSON object are taken through, the same text when none changes', async (t) => {
  const scrub = scrubberOf({ name: 'Carol', email: 'carol@example.test' })
  t.equal(scrubbedJson('{"contact":"carol@example.test","n":3,"list":["Carol","x"],"nested":{"a":null,"b":true}}', scrub), `{"contact":"${ERASED}","n":3,"list":["${ERASED}","x"],"nested":{"a":null,"b":true}}`)
  const same = '{ "order": "A-12" }'
  t.equal(scrubbedJson(same, scrub), same, 'unchanged: the very text given')
})

t.test('months before a moment: the same day, or the last of a shorter month', async (t) => {
  t.equal(monthsBefore(new Date('2026-12-05T10:00:00Z'), 6).toISOString(), '2026-06-05T10:00:00.000Z')
  t.equal(monthsBefore(new Date('2026-03-31T00:00:00Z'), 1).toISOString(), '2026-02-28T00:00:00.000Z')
  t.equal(monthsBefore(new Date('2028-03-31T00:00:00Z'), 1).toISOString(), '2028-02-29T00:00:00.000Z', 'a leap year')
  t.equal(monthsBefore(new Date('2026-01-15T00:00:00Z'), 13).toISOString(), '2024-12-15T00:00:00.000Z', 'across years')
  t.equal(erasedAddress(7), 'erased-customer-7@erased.invalid')
})
