import { resolve } from 'node:path'
import t from 'tap'
import { floatingPromises, programOf } from '../../tools/check/floating-promises.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Every promise of the project is awaited, returned, chained with a rejection handler or voided on
// purpose (tools/check/floating-promises.ts): a store call left alone would run after the answer
// went out on PostgreSQL, and its failure would be lost. `npm run check` (tools/check/run.ts) runs
// it over the whole program once, as its own step of .ci/run; this test shows that it finds them.

t.test('the check finds a floating promise and a promise taken for a truth, and lets an awaited or voided one be', async (t) => {
  const dir = t.testdir({
    'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', types: [] }, include: ['*.ts'] }),
    'a.ts': [
      'async function store(): Promise<number> { return 1 }',
      'export async function main() {',
      '  store()',
      '  await store()',
      '  void store()',
      '  store().catch(() => {})',
      '  if (!store()) return',
      '}',
    ].join('\n'),
  })
  const { program, diagnostics } = programOf(resolve(dir, 'tsconfig.json'))
  t.same(diagnostics, [], 'a program without type errors')
  const found = floatingPromises(program)
  t.same(found.map((f) => [f.line, f.text]), [[3, 'store()'], [7, 'a promise as a condition: store()']])
})

t.test("the same program's type errors are what tsc says: `npm run check` is the type check too", async (t) => {
  const dir = t.testdir({
    'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', types: [] }, include: ['*.ts'] }),
    'a.ts': 'export const n: number = "one"\n',
  })
  const { diagnostics } = programOf(resolve(dir, 'tsconfig.json'))
  t.same(diagnostics.map((d) => [d.file?.fileName.endsWith('a.ts'), d.code]), [[true, 2322]], "Type 'string' is not assignable to type 'number'")
})
