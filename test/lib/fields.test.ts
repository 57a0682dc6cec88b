import t from 'tap'
import { definitionProblem, fieldMatch, fieldValue, filterText, indexedTexts, reportedValues, stillTaken, type FieldKind } from '../../lib/fields.ts'

// Engines: one: pure functions of their arguments.
// What a custom field's value may be, kind by kind (lib/fields.ts), and what a filter names.

const field = (kind: FieldKind, choices: string[] = []) => ({ key: 'f', kind, choices })

t.test('each kind takes its own values, kept canonical, and says what is wrong with others', async (t) => {
  const cases: Array<[FieldKind, unknown, unknown]> = [
    ['text', '  A-1002 ', 'A-1002'],
    ['text', 'ünïcødé ✓ line\nbreak', 'ünïcødé ✓ line\nbreak'],
    ['number', 42.5, 42.5],
    ['number', -0, 0],
    ['date', '2026-02-28', '2026-02-28'],
    ['date', '2024-02-29', '2024-02-29'],
    ['yes_no', false, false],
    ['link', ' https://shop.example/orders/1002 ', 'https://shop.example/orders/1002'],
  ]
  for (const [kind, given, kept] of cases) t.same(fieldValue(field(kind), given), { value: kept }, `${kind} ${JSON.stringify(given)}`)
  t.same(fieldValue(field('choice', ['Basic', 'Pro']), 'Pro'), { value: 'Pro' })
  t.same(fieldValue(field('choices', ['A', 'B', 'C']), ['C', 'A', 'C']), { value: ['A', 'C'] }, "several choices: in the field's order, each once")
  t.same(fieldValue(field('choices', ['A']), []), { value: [] })
  for (const kind of ['text', 'number', 'date', 'choice', 'choices', 'yes_no', 'link'] as const) t.same(fieldValue(field(kind, ['A']), null), { value: null }, `null clears a ${kind}`)
  const wrong: Array<[FieldKind, unknown, RegExp]> = [
    ['text', 12, /text/],
    ['text', '   ', /blank/],
    ['text', 'x'.repeat(1001), /at most 1000/],
    ['text', 'bell\u0007', /control/],
    ['number', '12', /number/],
    ['number', Number.NaN, /number/],
    ['number', 1e16, /number/],
    ['date', '2026-02-30', /YYYY-MM-DD/],
    ['date', '2026-2-3', /YYYY-MM-DD/],
    ['date', 20260203, /YYYY-MM-DD/],
    ['yes_no', 'yes', /true or false/],
    ['link', 'javascript:alert(1)', /http/],
    ['link', 'https://', /http/],
    ['link', 'https://a.example/ b', /http/],
    ['link', 7, /http/],
  ]
  for (const [kind, given, problem] of wrong) t.match(fieldValue(field(kind), given), { problem }, `${kind} refuses ${JSON.stringify(given).slice(0, 30)}`)
  t.match(fieldValue(field('choice', ['Basic', 'Pro']), 'pro'), { problem: 'must be one of Basic, Pro' })
  t.match(fieldValue(field('choices', ['A']), 'A'), { problem: /list/ })
  t.match(fieldValue(field('choices', ['A']), ['A', 'Z']), { problem: /list/ })
})

t.test('the texts a filter finds a value by, and a filter read as them', async (t) => {
  t.same(indexedTexts('A-1002'), ['A-1002'])
  t.same(indexedTexts(12), ['12'])
  t.same(indexedTexts(true), ['true'])
  t.same(indexedTexts(['A', 'C']), ['A', 'C'])
  t.same(filterText(field('number'), '12.0'), { text: '12' })
  t.same(filterText(field('number'), '-0'), { text: '0' })
  t.match(filterText(field('number'), ''), { problem: /number/ })
  t.match(filterText(field('number'), 'twelve'), { problem: /number/ })
  t.same(filterText(field('yes_no'), 'Yes'), { text: 'true' })
  t.same(filterText(field('yes_no'), 'false'), { text: 'false' })
  t.match(filterText(field('yes_no'), 'maybe'), { problem: /true or false/ })
  t.same(filterText(field('date'), '2026-03-01'), { text: '2026-03-01' })
  t.match(filterText(field('date'), 'March'), { problem: /date/ })
  t.same(filterText(field('choices', ['A', 'B']), 'B'), { text: 'B' })
  t.match(filterText(field('choice', ['A']), 'Z'), { problem: /one of A/ })
  t.same(filterText(field('text'), ' A-1002 '), { text: 'A-1002' })
  t.match(filterText(field('link'), ' '), { problem: /blank/ })
})

t.test("a field's definition: its key, its name, and choices for the kinds that have them", async (t) => {
  const ok = { key: 'order_number', name: 'Order number', kind: 'text' as const, choices: [] }
  t.equal(definitionProblem(ok), undefined)
  t.equal(definitionProblem({ ...ok, kind: 'choices', choices: ['Basic', 'Pro'] }), undefined)
  t.match(definitionProblem({ ...ok, key: 'Order' }), { field: 'key' })
  t.match(definitionProblem({ ...ok, key: '1st' }), { field: 'key' })
  t.match(definitionProblem({ ...ok, key: 'tag' }), { field: 'key', problem: /a filter of the search/ })
  t.match(definitionProblem({ ...ok, key: 'a'.repeat(41) }), { field: 'key' })
  t.match(definitionProblem({ ...ok, name: ' ' }), { field: 'name' })
  t.match(definitionProblem({ ...ok, name: 'x'.repeat(101) }), { field: 'name' })
  t.match(definitionProblem({ ...ok, choices: ['A'] }), { field: 'choices', problem: /not text/ })
  t.match(definitionProblem({ ...ok, kind: 'choice' }), { field: 'choices', problem: /1 to 100/ })
  t.match(definitionProblem({ ...ok, kind: 'choice', choices: Array.from({ length: 101 }, (_, i) => `c${i}`) }), { field: 'choices' })
  t.match(definitionProblem({ ...ok, kind: 'choice', choices: ['A', 'A'] }), { field: 'choices', problem: /once/ })
  t.match(definitionProblem({ ...ok, kind: 'choice', choices: [' A'] }), { field: 'choices', problem: /" A"/ })
  t.match(definitionProblem({ ...ok, kind: 'choice', choices: [''] }), { field: 'choices' })
})

t.test("the search's match of a field: a value, or for a date a range, both ends included", async (t) => {
  const date = { key: 'renewal', kind: 'date' as const, choices: [] }
  t.same(fieldMatch(date, '2026-03-01'), { text: '2026-03-01' }, 'one day')
  t.same(fieldMatch(date, '>2026-02-28'), { from: '2026-03-01', to: null }, 'after a day: from the next (a leap year too)')
  t.same(fieldMatch(date, '>2028-02-28'), { from: '2028-02-29', to: null })
  t.same(fieldMatch(date, '>=2026-02-28'), { from: '2026-02-28', to: null })
  t.same(fieldMatch(date, '<2026-01-01'), { from: null, to: '2025-12-31' }, 'before a day: to the one before, across a year')
  t.same(fieldMatch(date, '<=2026-01-01'), { from: null, to: '2026-01-01' })
  t.same(fieldMatch(date, '2026-01-01..2026-03-31'), { from: '2026-01-01', to: '2026-03-31' })
  t.same(fieldMatch(date, '2026-01-01..2026-01-01'), { from: '2026-01-01', to: '2026-01-01' }, 'a range of one day')
  for (const wrong of ['>', '>2026-02-30', '>=tomorrow', '2026-01-01..', '..2026-01-01', '2026-1-1..2026-02-01', '>>2026-01-01']) t.match(fieldMatch(date, wrong), { problem: /date, YYYY-MM-DD, or a range of dates/ }, wrong)
  t.match(fieldMatch(date, '2026-03-01..2026-01-01'), { problem: 'is a range that ends (2026-01-01) before it starts (2026-03-01)' })
  t.match(fieldMatch(date, '>9999-12-31'), { problem: 'is a range after the last day there is' }, 'no day after the last (its next would not sort after it)')
  t.same(fieldMatch({ key: 'ref', kind: 'text', choices: [] }, '>A-1..B'), { text: '>A-1..B' }, 'a text is never a range: its value as written')
  t.same(fieldMatch({ key: 'seats', kind: 'number', choices: [] }, '12.0'), { text: '12' }, 'other kinds as the filter reads them')
})

t.test('what a discussion is counted under in the reports: key=value of the fields reported by, each choice of several', async (t) => {
  const reported = new Set(['plan', 'products', 'vip'])
  t.same(reportedValues({ plan: 'Pro', products: ['Chat', 'Desk'], vip: false, order_number: 'A-1', seats: 3 }, reported), ['plan=Pro', 'products=Chat', 'products=Desk', 'vip=false'], 'a text or a number is no breakdown')
  t.same(reportedValues({}, reported), [])
  t.same(reportedValues({ plan: 'Pro' }, new Set()), [])
})

t.test('values kept a while are those the fields take still', async (t) => {
  const fields = [{ key: 'plan', kind: 'choice' as const, choices: ['Basic', 'Pro'] }, { key: 'vip', kind: 'yes_no' as const, choices: [] }]
  t.same(stillTaken(fields, { plan: 'Pro', vip: null, gone: 'x' }), { plan: 'Pro', vip: null }, 'a key no longer a field left out; null kept')
  t.same(stillTaken(fields, { plan: 'Gold', vip: 'yes' }), {}, 'a value the kind no longer takes left out')
})
