import t from 'tap'
import { fillSavedReply, MAX_TAG_LENGTH, placeholderNames, splitTags, tagList, tagOf, tagsOf } from '../../lib/team-queue.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The pure rules of the team's queue (lib/team-queue.ts): what a tag may be, and a saved reply's
// placeholders filled in.

t.test('a tag: one form for every way of writing it, or the reason it cannot be one', async (t) => {
  t.same(tagOf('VIP'), { tag: 'vip' })
  t.same(tagOf('  Billing   Issue '), { tag: 'billing-issue' }, 'runs of spaces as one -')
  t.same(tagOf('snake_case'), { tag: 'snake-case' })
  t.same(tagOf('Café'), { tag: 'café' }, 'letters of any script')
  t.same(tagOf('cafe\u0301'), { tag: 'café' }, 'NFC: é written as e and an accent is é')
  t.same(tagOf('ÄRGER'), { tag: 'ärger' })
  t.same(tagOf('v2.1/eu:north'), { tag: 'v2.1/eu:north' })
  t.same(tagOf('日本語'), { tag: '日本語' })
  t.same(tagOf('x'.repeat(MAX_TAG_LENGTH)), { tag: 'x'.repeat(MAX_TAG_LENGTH) })
  for (const [text, problem] of [
    ['', /must not be empty/],
    ['   ', /must not be empty/],
    ['x'.repeat(MAX_TAG_LENGTH + 1), /at most 40 characters/],
    ['-dash', /starting with a letter or digit/],
    ['semi;colon', /letters, digits/],
    ['<script>', /letters, digits/],
    ['a\u0000b', /letters, digits/],
    ['emoji🔥', /letters, digits/],
    ['zero\u200bwidth', /letters, digits/],
  ] as const) t.match(tagOf(text), { problem }, JSON.stringify(text))
})

t.test('a list of tags: sorted, once each, at most twenty, the first problem named', async (t) => {
  t.same(tagsOf(['b', 'A', 'a', 'B ']), { tags: ['a', 'b'] })
  t.same(tagsOf([]), { tags: [] })
  t.match(tagsOf(['ok', 'no;t']), { problem: /^tag "no;t": / })
  t.match(tagsOf(Array.from({ length: 21 }, (_, i) => `t${i}`)), { problem: 'a discussion carries at most 20 tags' })
  t.same(tagsOf(Array.from({ length: 21 }, () => 'same')), { tags: ['same'] }, 'twenty-one times one tag is one tag')
  t.same(splitTags(' printer, urgent  hardware,,'), ['printer', 'urgent', 'hardware'])
  t.same(tagList(''), [])
  t.same(tagList('a b'), ['a', 'b'])
})

t.test('a saved reply filled in: every placeholder, spaces inside the braces, the unknown left as written', async (t) => {
  const context = { customerName: 'Carol  Ann Customer', supporterName: 'Bob', siteName: 'Acme', number: 42 }
  t.equal(fillSavedReply('Hi {{customer.first_name}} ({{ customer.name }}), {{supporter.name}} of {{site.name}} on #{{discussion.number}}.', context), 'Hi Carol (Carol  Ann Customer), Bob of Acme on #42.')
  t.equal(fillSavedReply('{{customer.email}} {{nope}} {{customer.name', context), '{{customer.email}} {{nope}} {{customer.name', 'what it does not know stays, to be seen before sending')
  t.equal(fillSavedReply('{{__proto__}} {{constructor}} {{tostring}} {{hasownproperty}}', context), '{{__proto__}} {{constructor}} {{tostring}} {{hasownproperty}}', "an object's own names are no placeholders")
  t.equal(fillSavedReply('{{customer.name}}', { ...context, customerName: '{{supporter.name}}' }), '{{supporter.name}}', 'a name that looks like a placeholder is not filled again')
  t.equal(fillSavedReply('Hi {{customer.first_name}}', { ...context, customerName: '' }), 'Hi ', 'a customer without a name')
  t.same(placeholderNames, ['{{customer.name}}', '{{customer.first_name}}', '{{supporter.name}}', '{{site.name}}', '{{discussion.number}}'])
})
