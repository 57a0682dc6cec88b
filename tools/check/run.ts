// npm run check: the static checks, once, apart from the test passes (.ci/run runs it): every
// promise of the project awaited, returned, chained or voided (tools/check/floating-promises.ts).
// The type check itself is `npm run typecheck`; the house rules on imports are tests
// (test/house/imports.test.ts), run once since they cannot tell the engines apart.
import { resolve } from 'node:path'
import { floatingPromises } from './floating-promises.ts'

const root = resolve(import.meta.dirname, '..', '..')
const found = floatingPromises(resolve(root, 'tsconfig.json'))
for (const f of found) console.log(`${f.file.slice(root.length + 1)}:${f.line}: a promise left floating: ${f.text}`)
console.log(found.length === 0 ? 'check: every promise is awaited, returned, chained or voided' : `check: ${found.length} floating promises`)
process.exitCode = found.length === 0 ? 0 : 1
