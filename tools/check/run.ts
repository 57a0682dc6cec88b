// npm run check: the static checks, once, apart from the test passes (.ci/run runs it): the type
// check (what `tsc --noEmit`, `npm run typecheck`, says) and every promise of the project awaited,
// returned, chained or voided (tools/check/floating-promises.ts), over one program checked once
// (two programs, tsc's and the promises', took 20 s and 15 s of a quiet machine; one takes the
// first's). The house rules on imports are tests (test/house/imports.test.ts), run once since
// they cannot tell the engines apart.
import { resolve } from 'node:path'
import ts from 'typescript'
import { floatingPromises, programOf } from './floating-promises.ts'

const root = resolve(import.meta.dirname, '..', '..')
const { program, diagnostics } = programOf(resolve(root, 'tsconfig.json'))
if (diagnostics.length > 0) {
  const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' }
  console.log(ts.formatDiagnosticsWithColorAndContext(diagnostics, host))
  console.log(`check: ${diagnostics.length} type errors`)
}
const found = floatingPromises(program)
for (const f of found) console.log(`${f.file.slice(root.length + 1)}:${f.line}: a promise left floating: ${f.text}`)
console.log(found.length === 0 ? 'check: every promise is awaited, returned, chained or voided' : `check: ${found.length} floating promises`)
process.exitCode = found.length === 0 && diagnostics.length === 0 ? 0 : 1
