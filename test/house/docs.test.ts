import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'

// Engines: one: nothing here reaches a database of the suite's engine.
// The map for the next engineer (docs/architecture.md) and the README name files of this
// repository; every one they link to must exist, or the map is wrong.

const ROOT = resolve(import.meta.dirname, '..', '..')

/** The anchors of a Markdown file's headings, as GitHub makes them (code blocks left out). */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>()
  let fenced = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line)
    if (heading) anchors.add(heading[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replaceAll(' ', '-'))
  }
  return anchors
}

/** Every link of `document` to a file of the repository, with its anchor when it has one. */
function links(document: string): Array<{ file: string; anchor: string | undefined }> {
  const text = readFileSync(join(ROOT, document), 'utf8')
  const base = resolve(ROOT, document, '..')
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => {
      const [path, anchor] = target.split('#')
      return { file: path ? resolve(base, path) : join(ROOT, document), anchor }
    })
}

const DOCUMENTS = ['README.md', 'docs/guide.md', 'docs/operations.md', 'docs/development.md', 'docs/architecture.md', 'docs/decisions.md', 'docs/reference/settings.md', 'docs/reference/commands.md', 'tools/bench/README.md']

for (const document of DOCUMENTS) {
  t.test(`${document} links only to files and headings that exist`, async (t) => {
    const found = links(document)
    t.ok(document !== 'docs/architecture.md' || found.length > 20, 'the map is read')
    t.same(found.filter(({ file }) => !existsSync(file)).map(({ file }) => file.slice(ROOT.length + 1)), [], 'files')
    const toHeadings = found.filter(({ file, anchor }) => anchor && file.endsWith('.md') && existsSync(file))
    t.same(toHeadings.filter(({ file, anchor }) => !anchorsOf(readFileSync(file, 'utf8')).has(anchor!)).map(({ file, anchor }) => `${file.slice(ROOT.length + 1)}#${anchor}`), [], 'headings')
  })
}

t.test('the anchors are GitHub\'s', async (t) => {
  t.same([...anchorsOf('# A, b: c (d)\n```\n# not a heading\n```\n## Token lifecycle, the security log and leaked tokens\n')], ['a-b-c-d', 'token-lifecycle-the-security-log-and-leaked-tokens'])
})

t.test('the README is a short door: at most 250 lines', async (t) => {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length
  t.ok(lines <= 250, `${lines} lines`)
})
