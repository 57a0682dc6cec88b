import t from 'tap'
import {
  FILLER,
  fold,
  ftsMatchOf,
  MAX_OCCURRENCES,
  MAX_POSITIONS,
  MAX_QUERY,
  MAX_TERMS,
  MAX_WORD,
  parseQuery,
  QueryProblem,
  searchDocument,
  snippetOf,
  snippetParts,
  tsqueryOf,
  tsvectorOf,
  wordsOf,
} from '../../lib/search-text.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The words of search, the same for both engines (docs/decisions.md, "Search"): folding, the
// documents each engine is given, the query language and what it becomes for FTS5 and for
// PostgreSQL, and the snippets.

t.test('text is folded and cut into words of letters and digits', async (t) => {
  t.equal(fold('Café NAÏVE Ångström'), 'cafe naive angstrom', 'case and accents off')
  t.equal(fold('ﬁle ①'), 'file 1', 'compatibility forms')
  t.equal(fold('İstanbul'), 'istanbul', 'a dotted capital I is an i')
  t.same(wordsOf("Printer's on fire! (again) e-mail x_200 3.5"), ['printer', 's', 'on', 'fire', 'again', 'e', 'mail', 'x', '200', '3', '5'])
  t.same(wordsOf('Die Straße ist groß'), ['die', 'straße', 'ist', 'groß'], 'ß stays itself')
  t.same(wordsOf('東京 オフィス の プリンター'), ['東京', 'オフィス', 'の', 'フリンター'], 'scripts without spaces: runs of letters (and the kana lose their voicing marks, on both sides alike)')
  t.same(wordsOf('Ο εκτυπωτής'), ['ο', 'εκτυπωτης'])
  t.same(wordsOf('a\u0000b\u200bc\u202ed'), ['a', 'b', 'c', 'd'], 'U+0000 and invisible characters separate')
  t.same(wordsOf('*** --- \'); DROP'), ['drop'], 'punctuation is no word')
  t.equal(wordsOf('x'.repeat(100))[0].length, MAX_WORD, 'a long word is cut')
  t.same(wordsOf(''), [])
})

t.test('a document: the sections apart, every word with its positions, the engines given the same words', async (t) => {
  const document = searchDocument('Printer on fire', [
    { body: 'The printer smokes.', internal: false },
    { body: 'Warranty expired', internal: true },
    { body: 'Sent a technician', internal: false },
  ])
  t.same(document.words, { title: ['printer', 'on', 'fire'], text: ['the', 'printer', 'smokes', 'sent', 'a', 'technician'], notes: ['warranty', 'expired'] })
  t.same(document.positions.get('printer'), [
    { at: 1, section: 'title' },
    { at: 6, section: 'text' },
  ], 'a position between two sections: no phrase runs across')
  t.same(document.positions.get('warranty'), [{ at: 12, section: 'notes' }])
  t.equal(tsvectorOf(document).split(' ')[0], "'printer':1A,6B")
  t.match(tsvectorOf(document), "'warranty':12C")

  const repeated = searchDocument('', [{ body: `${'spam '.repeat(MAX_OCCURRENCES + 2)}end`, internal: false }])
  t.equal(repeated.positions.get('spam')!.length, MAX_OCCURRENCES, 'a word is indexed up to PostgreSQL\'s count of positions')
  t.same(repeated.words.text.slice(MAX_OCCURRENCES - 1, MAX_OCCURRENCES + 3), ['spam', FILLER, FILLER, 'end'], 'past it FTS5 is given a filler, so the words after keep their places')
  t.equal(repeated.positions.get('end')![0].at, MAX_OCCURRENCES + 4, 'the same place in the tsvector')

  const long = searchDocument('', [{ body: Array.from({ length: MAX_POSITIONS + 50 }, (_, i) => `w${i}`).join(' '), internal: false }])
  t.ok(Math.max(...[...long.positions.values()].flat().map((p) => p.at)) <= MAX_POSITIONS, 'no position past the highest PostgreSQL keeps')
  t.equal(long.words.text.length, long.positions.size, 'and FTS5 is given no word the tsvector lacks')

  const wide = searchDocument('', [{ body: Array.from({ length: 16_000 }, (_, i) => `${'字'.repeat(60)}${i}`).join(' '), internal: false }])
  t.ok(Buffer.byteLength(tsvectorOf(wide)) < 1_000_000, 'a tsvector under PostgreSQL\'s 1 MB, however long the words')
  t.equal(wide.words.text.length, wide.positions.size)
})

t.test('the query language: words, phrases, exclusions, filters; what cannot be read is said', async (t) => {
  t.same(parseQuery('Printer  "on FIRE" -toner -"paper jam"'), { find: [['printer'], ['on', 'fire']], exclude: [['toner'], ['paper', 'jam']], filters: {}, fields: {} })
  t.same(parseQuery('e-mail x-200').find, [['e', 'mail'], ['x', '200']], 'a word of several parts is a phrase')
  t.same(parseQuery('invoice state:open Category:"Feature requests" from:carol@example.com assignee:me tag:vip after:2026-01-01 before:2026-02-01'), {
    find: [['invoice']],
    exclude: [],
    filters: { state: 'open', category: 'Feature requests', from: 'carol@example.com', assignee: 'me', tag: 'vip', after: '2026-01-01', before: '2026-02-01' },
    fields: {},
  })
  t.same(parseQuery('state:resolved').filters, { state: 'resolved' }, 'filters alone')
  t.same(parseQuery('say:"hello world" printer').find, [['say'], ['hello', 'world'], ['printer']], 'a quoted value of no filter: a word and a phrase')
  t.same(parseQuery('https://example.com/a error: nope:x').find, [['https', 'example', 'com', 'a'], ['error'], ['nope', 'x']], 'what names no filter is words')
  t.same(parseQuery('printer * NEAR( \'); DROP').find, [['printer'], ['near'], ['drop']], "FTS5's and SQL's syntax is words")
  t.same(parseQuery('-state:open printer').exclude, [['state', 'open']], 'an excluded filter is excluded words')

  const problems: Array<[string, RegExp]> = [
    ['"', /quote that is not closed/],
    ['printer "on fire', /quote that is not closed/],
    ['-printer', /only what to leave out/],
    ['', /nothing to look for/],
    ['*** ---', /nothing to look for/],
    ['state:open state:new', /gives state: twice/],
    ['category:""', /without a value/],
    ['x'.repeat(MAX_QUERY + 1), /longer than/],
    [Array.from({ length: MAX_TERMS + 1 }, (_, i) => `w${i}`).join(' '), /more than 32 words$/],
    // Issue 62: the words of phrases count, one phrase and all of them are bounded.
    [Array.from({ length: 17 }, (_, i) => `"a${i} b${i}"`).join(' '), /more than 32 words$/],
    [`"${'the '.repeat(249)}"`, /a phrase of more than 8 words/],
    ['the.the.the.the.the.the.the.the.the', /a phrase of more than 8 words/],
    ['"a b c d e f g h" "i j k l m n o p" "q r"', /more than 16 words in phrases/],
  ]
  for (const [query, problem] of problems) t.throws(() => parseQuery(query), { constructor: QueryProblem, message: problem }, JSON.stringify(query.slice(0, 40)))
  t.same(parseQuery(`${'printer '.repeat(120)}"on fire" "on fire" -toner -toner`), { find: [['printer'], ['on', 'fire']], exclude: [['toner']], filters: {}, fields: {} }, 'a word or phrase said again is looked for once')
  t.same(parseQuery('"a b c d e f g h" "i j k l m n o p" q').find.length, 3, 'at the bounds: taken')
})

t.test("the site's custom fields are filters by their keys; any other name:value stays words", async (t) => {
  const keys = ['order_number', 'plan2']
  t.same(parseQuery('invoice order_number:A-1002', keys), { find: [['invoice']], exclude: [], filters: {}, fields: { order_number: 'A-1002' } })
  t.same(parseQuery('plan2:"Pro plan" state:open', keys), { find: [], exclude: [], filters: { state: 'open' }, fields: { plan2: 'Pro plan' } }, 'quoted, beside a filter; a field alone is something to look for')
  t.same(parseQuery('order_number:A-1002').find, [['order', 'number', 'a', '1002']], 'a key the searcher may not use is words')
  t.same(parseQuery('Plan2:Pro', keys).fields, { plan2: 'Pro' }, 'a key in any case, as the filters')
  t.throws(() => parseQuery('order_number:A order_number:B', keys), { message: 'gives order_number: twice' })
  t.throws(() => parseQuery('plan2:" "', keys), { message: 'gives plan2: without a value' })
})

t.test('a query as FTS5 and PostgreSQL take it', async (t) => {
  const query = parseQuery('printer "on fire" -toner')
  t.equal(ftsMatchOf(query), '"printer" AND "on fire" NOT "toner"')
  t.equal(ftsMatchOf(query, ['title', 'text']), '{title text} : ("printer" AND "on fire" NOT "toner")', 'a customer: the title and the text only')
  t.equal(tsqueryOf(query), "'printer' & ('on' <-> 'fire') & !'toner'")
  t.equal(tsqueryOf(query, ['title', 'text']), "'printer':AB & ('on':AB <-> 'fire':AB) & !'toner':AB")
})

t.test('a snippet: some words around the first match, the matches where they are', async (t) => {
  const text = `${'one two three four five six seven eight nine ten '.repeat(2)}The Café   printer\nis on FIRE and the rest ${'word '.repeat(30)}end`
  const snippet = snippetOf(text, parseQuery('cafe fire'))!
  t.ok(snippet.text.startsWith('…six seven'), 'from a little before the first match')
  t.ok(snippet.text.endsWith('…'), 'cut after about two dozen words')
  t.same(snippet.matches.map(([a, b]) => snippet.text.slice(a, b)), ['Café', 'FIRE'], 'the words as written')
  t.match(snippet.text, 'The Café printer is on FIRE', 'runs of white space as one')
  t.equal(snippetOf('nothing here', parseQuery('printer')), null)
  const whole = snippetOf('Printer on fire', parseQuery('fire'))!
  t.same(whole, { text: 'Printer on fire', matches: [[11, 15]] }, 'a short text whole')
  t.same(snippetParts(whole), [
    { text: 'Printer on ', match: false },
    { text: 'fire', match: true },
  ])
  t.same(snippetParts({ text: '<b>x</b> y', matches: [[3, 4]] }), [
    { text: '<b>', match: false },
    { text: 'x', match: true },
    { text: '</b> y', match: false },
  ], 'pieces as written: the view escapes them')
})
