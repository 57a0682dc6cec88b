import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { RESULTS, writeReport } from './report.ts'
import { summarize, type RawResults } from './results.ts'

// node --import tsx tools/bench/rewrite-report.ts [DIR]: writes results.md and chart.svg again from
// DIR/results.json (default tools/bench/results/), after a change to the report's code, without
// measuring anything again.

const dir = process.argv[2] ?? RESULTS
const raw = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as RawResults
console.log(writeReport(raw, summarize(raw), dir).join(', '))
