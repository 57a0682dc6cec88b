// The words of full-text search, the same on both engines (docs/decisions.md, "Search"): text is
// folded and cut into words here, once, and each engine is handed the words themselves (SQLite's
// FTS5 as words separated by spaces, PostgreSQL as a tsvector written out with their positions),
// so that "café" and "cafe" are one word on both, whatever the database's locale or extensions,
// and a query finds the same discussions on either.

/** The longest word kept, in UTF-16 code units: a longer one is cut there, in documents and queries alike. */
export const MAX_WORD = 64
/** The highest position PostgreSQL keeps in a tsvector; a discussion's words past it are not indexed. */
export const MAX_POSITIONS = 16_383
/** How many times one word of a discussion is indexed (PostgreSQL keeps 256 positions of a word). */
export const MAX_OCCURRENCES = 256
/** A bound on what a document writes per word (PostgreSQL's tsvector holds under 1 MB). */
const MAX_VECTOR_BYTES = 800_000
/**
 * What FTS5 is given in place of a word past MAX_OCCURRENCES: a token (any character above ASCII
 * is part of a word for FTS5's `ascii` tokenizer) that no folded text can hold, so nothing finds
 * it, and the words after it keep their positions.
 */
export const FILLER = '\u00b7'

const WORD = /[\p{L}\p{N}]+/gu

/** Text as search compares it: lower case, compatibility forms and accents taken off ("Café" is "cafe", "ﬁ" is "fi"). */
export function fold(text: string): string {
  return text.toLowerCase().normalize('NFKD').replace(/\p{M}+/gu, '')
}

/** The words of a text, folded, in order: runs of letters and digits; anything else separates them. */
export function wordsOf(text: string): string[] {
  return (fold(text).match(WORD) ?? []).map((word) => (word.length > MAX_WORD ? word.slice(0, MAX_WORD) : word))
}

/** The parts of a discussion that search reads: the title, the text the customer sees, the team's notes. */
export const SECTIONS = ['title', 'text', 'notes'] as const
export type Section = (typeof SECTIONS)[number]

/**
 * What is indexed of a discussion: the words of each section, as FTS5 is given them (FILLER where
 * a word is past its count), and each indexed word's positions, as PostgreSQL is given them
 * (the sections one position apart, so that no phrase runs from one into the next).
 */
export interface SearchDocument {
  words: Record<Section, string[]>
  positions: Map<string, Array<{ at: number; section: Section }>>
}

/** The document of a discussion from its title and its comments, in their order. */
export function searchDocument(title: string, comments: ReadonlyArray<{ body: string; internal: boolean }>): SearchDocument {
  const texts: Record<Section, string[]> = {
    title: [title],
    text: comments.filter((c) => !c.internal).map((c) => c.body),
    notes: comments.filter((c) => c.internal).map((c) => c.body),
  }
  const words: Record<Section, string[]> = { title: [], text: [], notes: [] }
  const positions = new Map<string, Array<{ at: number; section: Section }>>()
  let at = 0
  let bytes = 0
  for (const section of SECTIONS) {
    // One position between sections; PostgreSQL positions start at 1.
    at += 1
    for (const text of texts[section]) {
      for (const word of wordsOf(text)) {
        if (at > MAX_POSITIONS) break
        let seen = positions.get(word)
        if (!seen) {
          bytes += Buffer.byteLength(word) + 8
          if (bytes > MAX_VECTOR_BYTES) break
          seen = []
          positions.set(word, seen)
        }
        if (seen.length < MAX_OCCURRENCES) {
          seen.push({ at, section })
          bytes += 2
          words[section].push(word)
        } else {
          words[section].push(FILLER)
        }
        at += 1
      }
    }
  }
  return { words, positions }
}

/** PostgreSQL's weight of each section: A for titles, B for what the customer sees, C for the notes. */
export const WEIGHTS: Record<Section, string> = { title: 'A', text: 'B', notes: 'C' }

/** The document as a tsvector literal: `'word':1A,7B ...` (a word holds letters and digits only: nothing to escape). */
export function tsvectorOf(document: SearchDocument): string {
  return [...document.positions].map(([word, at]) => `'${word}':${at.map((p) => `${p.at}${WEIGHTS[p.section]}`).join(',')}`).join(' ')
}

// ---- the query language

/** The filters a query may hold, by name. */
export const FILTERS = ['state', 'category', 'from', 'assignee', 'tag', 'sla', 'before', 'after'] as const
export type FilterName = (typeof FILTERS)[number]

/** The longest query, in characters. */
export const MAX_QUERY = 1_000
/** The most words a query may hold, those of its phrases and excluded ones included. */
export const MAX_TERMS = 32
/**
 * The most words one phrase may hold, and all of a query's phrases together: both engines match a
 * phrase position by position, a pass over each word's postings, so a long phrase of a common word
 * cost seconds of the only thread (issue 62). Plain words joined by AND stay cheap.
 */
export const MAX_PHRASE_WORDS = 8
export const MAX_PHRASED_WORDS = 16

/** A query read: phrases to find (each its words; a plain word is a phrase of one), phrases to leave out, and filters. */
export interface SearchQuery {
  find: string[][]
  exclude: string[][]
  filters: Partial<Record<FilterName, string>>
  /** Custom fields' values asked for, by key (`order_number:A-1002`: issue 72). */
  fields: Record<string, string>
}

/** Why a query cannot be read: a sentence for the 400. */
export class QueryProblem extends Error {}

// A term: an optional -, then "a phrase" or a run of anything but spaces and quotes; or a filter: name:value, name:"value".
const TERM = /(-?)(?:"([^"]*)("?)|([^\s"]+))/gu

/**
 * Reads a query: words, "quoted phrases", -excluded words or phrases, and filters written
 * `name:value` (`name:"a value"`). Something that looks like a filter but names none
 * (`http://...`, `error:`) is words. Throws QueryProblem saying what is wrong.
 */
export function parseQuery(text: string, fieldKeys: readonly string[] = []): SearchQuery {
  if (text.length > MAX_QUERY) throw new QueryProblem(`is longer than ${MAX_QUERY} characters`)
  const query: SearchQuery = { find: [], exclude: [], filters: {}, fields: {} }
  // A filter's quoted value: name:"value" is one term, so it is read before the others.
  const rest = text.replace(/(^|\s)([a-z][a-z0-9_]*):"([^"]*)"/giu, (whole, space: string, name: string, value: string) => {
    if (!setNamed(query, name, value, fieldKeys)) return whole
    return `${space} `
  })
  for (const [, minus, quoted, closed, plain] of rest.matchAll(TERM)) {
    if (quoted !== undefined && closed === '') throw new QueryProblem('has a quote that is not closed')
    if (plain !== undefined && minus === '') {
      const colon = plain.indexOf(':')
      if (colon > 0 && colon < plain.length - 1 && setNamed(query, plain.slice(0, colon), plain.slice(colon + 1), fieldKeys)) continue
    }
    const words = wordsOf(quoted ?? plain!)
    // Nothing to look for in it (punctuation alone: `*`, `'); --`).
    if (words.length === 0) continue
    if (words.length > MAX_PHRASE_WORDS) throw new QueryProblem(`holds a phrase of more than ${MAX_PHRASE_WORDS} words`)
    const side = minus === '-' ? query.exclude : query.find
    // A word or phrase said twice finds what it finds once: looked for once.
    if (!side.some((kept) => kept.join(' ') === words.join(' '))) side.push(words)
  }
  const terms = [...query.find, ...query.exclude]
  if (terms.flat().length > MAX_TERMS) throw new QueryProblem(`holds more than ${MAX_TERMS} words`)
  if (terms.filter((words) => words.length > 1).flat().length > MAX_PHRASED_WORDS) throw new QueryProblem(`holds more than ${MAX_PHRASED_WORDS} words in phrases`)
  if (query.find.length === 0 && query.exclude.length > 0) throw new QueryProblem('says only what to leave out: add a word to look for')
  if (query.find.length === 0 && Object.keys(query.filters).length === 0 && Object.keys(query.fields).length === 0) throw new QueryProblem('has nothing to look for: give a word, a "phrase" or a filter')
  return query
}

function filterName(name: string): FilterName | undefined {
  const lower = name.toLowerCase()
  return (FILTERS as readonly string[]).includes(lower) ? (lower as FilterName) : undefined
}

/** Sets the filter, or the field, `name` names; false when it names neither (its text is words). */
function setNamed(query: SearchQuery, name: string, value: string, fieldKeys: readonly string[]): boolean {
  const filter = filterName(name)
  const key = filter === undefined && fieldKeys.includes(name.toLowerCase()) ? name.toLowerCase() : undefined
  if (filter === undefined && key === undefined) return false
  const label = filter ?? key!
  if ((filter ? query.filters[filter] : query.fields[key!]) !== undefined) throw new QueryProblem(`gives ${label}: twice`)
  if (value.trim() === '') throw new QueryProblem(`gives ${label}: without a value`)
  if (filter) query.filters[filter] = value.trim()
  else query.fields[key!] = value.trim()
  return true
}

/**
 * The query as FTS5's MATCH expression: each phrase quoted (its words hold letters and digits
 * only), all of them ANDed, the excluded ones after NOT; over `columns` only when given.
 */
export function ftsMatchOf(query: SearchQuery, columns?: readonly Section[]): string {
  const phrase = (words: string[]) => `"${words.join(' ')}"`
  const expression = [query.find.map(phrase).join(' AND '), ...query.exclude.map(phrase)].join(' NOT ')
  return columns ? `{${columns.join(' ')}} : (${expression})` : expression
}

/** The query as a tsquery literal: phrases with <->, ANDed, the excluded ones negated; restricted to the weights of `sections` when given. */
export function tsqueryOf(query: SearchQuery, sections?: readonly Section[]): string {
  const weights = sections ? `:${sections.map((s) => WEIGHTS[s]).join('')}` : ''
  const phrase = (words: string[]) => {
    const inner = words.map((word) => `'${word}'${weights}`).join(' <-> ')
    return words.length > 1 ? `(${inner})` : inner
  }
  return [...query.find.map(phrase), ...query.exclude.map((words) => `!${phrase(words)}`)].join(' & ')
}

// ---- snippets

/** How many words a snippet shows around its first match. */
const SNIPPET_WORDS = 24

/** A piece of a text around a match: the text as written, and where the matched words are in it ([start, end) in UTF-16 code units). */
export interface Snippet {
  text: string
  matches: Array<[number, number]>
}

/**
 * The snippet of `text` for the words searched for: about SNIPPET_WORDS words from a little
 * before the first match, each matched word's place in it marked; null when no word is in the text.
 */
export function snippetOf(text: string, query: SearchQuery): Snippet | null {
  const wanted = new Set(query.find.flat())
  const hit = (word: string) => wordsOf(word).some((w) => wanted.has(w))
  const spans = [...text.matchAll(SPAN)].map((m) => ({ start: m.index, end: m.index + m[0].length, hit: hit(m[0]) }))
  const first = spans.findIndex((s) => s.hit)
  if (first === -1) return null
  const from = Math.max(0, first - 6)
  const to = Math.min(spans.length, from + SNIPPET_WORDS)
  const prefix = from === 0 ? '' : '…'
  const suffix = to === spans.length ? '' : '…'
  const body = text.slice(from === 0 ? 0 : spans[from].start, to === spans.length ? text.length : spans[to - 1].end).replace(/\s+/gu, ' ').trim()
  const shown = `${prefix}${body}${suffix}`
  const matches: Array<[number, number]> = [...shown.matchAll(SPAN)].filter((m) => hit(m[0])).map((m) => [m.index, m.index + m[0].length])
  return { text: shown, matches }
}

// A word as written: letters, digits and the marks on them.
const SPAN = /[\p{L}\p{N}\p{M}]+/gu

/** The snippet's text in pieces, each matched or not, for a page to mark the matches (escaping each piece as it writes it). */
export function snippetParts(snippet: Snippet): Array<{ text: string; match: boolean }> {
  const parts: Array<{ text: string; match: boolean }> = []
  let at = 0
  for (const [start, end] of snippet.matches) {
    if (start > at) parts.push({ text: snippet.text.slice(at, start), match: false })
    parts.push({ text: snippet.text.slice(start, end), match: true })
    at = end
  }
  if (at < snippet.text.length) parts.push({ text: snippet.text.slice(at), match: false })
  return parts
}
