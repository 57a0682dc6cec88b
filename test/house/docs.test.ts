import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'

// The map for the next engineer (docs/architecture.md) and the README name files of this
// repository; every one they link to must exist, or the map is wrong.

const ROOT = resolve(import.meta.dirname, '..', '..')

function linkedFiles(document: string): string[] {
  const text = readFileSync(join(ROOT, document), 'utf8')
  const base = resolve(ROOT, document, '..')
  return [...text.matchAll(/\]\(([^)#\s]+)[^)]*\)/g)]
    .map((m) => m[1])
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => resolve(base, target))
}

for (const document of ['docs/architecture.md', 'docs/decisions.md', 'README.md', 'tools/bench/README.md']) {
  t.test(`${document} links only to files that exist`, async (t) => {
    const links = linkedFiles(document)
    t.ok(document !== 'docs/architecture.md' || links.length > 20, 'the map is read')
    t.same(links.filter((file) => !existsSync(file)).map((file) => file.slice(ROOT.length + 1)), [])
  })
}
