import { readProfile, summarise, type ProfileSummary } from './profile.ts'

// With --profile, every server runs under node --cpu-prof and each measurement's time window is
// kept, so the server's CPU can be charged to the scenario that caused it: microseconds of CPU
// per request, by package or file and by function, and the difference between two scenarios.

export interface ProfiledScenario {
  id: string
  label: string
  file: string
  windows: Array<[number, number]>
  requests: number
}

interface Charged {
  scenario: ProfiledScenario
  busyUsPerRequest: number
  areas: Map<string, number>
  functions: Map<string, number>
}

const IDLE = '((idle))'

function charge(scenario: ProfiledScenario, cache: Map<string, ReturnType<typeof readProfile>>): Charged {
  let profile = cache.get(scenario.file)
  if (!profile) cache.set(scenario.file, (profile = readProfile(scenario.file)))
  const summary: ProfileSummary = summarise(profile, scenario.windows)
  const perRequest = (ms: number) => (ms * 1000) / scenario.requests
  const idle = summary.byArea.find((a) => a.name === IDLE)?.ms ?? 0
  return {
    scenario,
    busyUsPerRequest: perRequest(summary.totalMs - idle),
    areas: new Map(summary.byArea.filter((a) => a.name !== IDLE).map((a) => [a.name, perRequest(a.ms)])),
    functions: new Map(summary.byFunction.filter((f) => !f.name.startsWith('(idle)')).map((f) => [f.name, perRequest(f.ms)])),
  }
}

const top = (map: Map<string, number>, count: number) => [...map].sort((a, b) => b[1] - a[1]).slice(0, count)
const us = (x: number) => `${x.toFixed(1).padStart(7)} us`

/** The text of the report: each scenario's CPU per request, then the differences that matter. */
export function profileReport(scenarios: ProfiledScenario[], comparisons: Array<[string, string]>): string {
  const cache = new Map<string, ReturnType<typeof readProfile>>()
  const charged = new Map(scenarios.map((s) => [s.id, charge(s, cache)]))
  const lines: string[] = ['Server CPU per request, from node --cpu-prof samples inside each measurement window', '']
  for (const c of charged.values()) {
    lines.push(`${c.scenario.label} (${c.scenario.id}): ${us(c.busyUsPerRequest).trim()} of CPU per request over ${c.scenario.requests} requests`)
    for (const [name, value] of top(c.areas, 10)) lines.push(`  ${us(value)}  ${name}`)
    lines.push('  top functions:')
    for (const [name, value] of top(c.functions, 8)) lines.push(`  ${us(value)}  ${name}`)
    lines.push('')
  }
  for (const [a, b] of comparisons) {
    const ca = charged.get(a)
    const cb = charged.get(b)
    if (!ca || !cb) continue
    lines.push(`${a} minus ${b}: ${us(ca.busyUsPerRequest - cb.busyUsPerRequest).trim()} more CPU per request`)
    const diff = (x: Map<string, number>, y: Map<string, number>) => {
      const names = new Set([...x.keys(), ...y.keys()])
      return new Map([...names].map((name) => [name, (x.get(name) ?? 0) - (y.get(name) ?? 0)]))
    }
    for (const [name, value] of top(diff(ca.areas, cb.areas), 10)) lines.push(`  ${us(value)}  ${name}`)
    lines.push('  by function:')
    for (const [name, value] of top(diff(ca.functions, cb.functions), 12)) lines.push(`  ${us(value)}  ${name}`)
    lines.push('')
  }
  return lines.join('\n')
}

/**
 * Where a server's start-up went: its main thread's samples from the start of profiling to its
 * first answer, as inclusive time of the steps that matter (a sample counts in every step on
 * its stack, so the lines overlap).
 */
export function startupReport(name: string, file: string, startupMs: number): string {
  const profile = readProfile(file)
  const window: [number, number] = [profile.startTime, profile.startTime + startupMs * 1000]
  const summary = summarise(profile, [window])
  const idle = summary.byArea.find((a) => a.name === IDLE)?.ms ?? 0
  const inFile = (part: string) => (frame: { url: string }) => frame.url.includes(part)
  const steps: Array<[string, (frame: { url: string; functionName: string }) => boolean]> = [
    ['loading modules (node:internal/modules)', (f) => f.url.startsWith('node:internal/modules')],
    ['  of which waiting on the tsx loader thread', (f) => f.functionName === 'waitForWorker' || f.functionName === 'receiveMessageOnPort'],
    ['fastify plugins and ready (avvio)', inFile('node_modules/avvio/')],
    ['  compiling validators (ajv)', inFile('node_modules/ajv/')],
    ['  compiling serializers (fast-json-stringify)', inFile('node_modules/fast-json-stringify/')],
    ['  OpenAPI document (@fastify/swagger)', inFile('node_modules/@fastify/swagger/')],
    ['database: open and migrate (db/sqlite/client)', (f) => f.url.includes('db/sqlite/client') || f.url.includes('migrator')],
    ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ]
  const lines = [`${name}: first answer after ${startupMs.toFixed(0)} ms; main thread busy ${(summary.totalMs - idle).toFixed(0)} ms, idle ${idle.toFixed(0)} ms`]
  // A bundle has no node_modules paths left: its steps that match nothing are not shown.
  for (const [label, match] of steps) {
    const ms = summary.inclusive(match)
    if (ms > 0) lines.push(`  ${ms.toFixed(0).padStart(6)} ms  ${label}`)
  }
  lines.push('  busiest packages or files (self time):')
  for (const area of summary.byArea.filter((a) => a.name !== IDLE).slice(0, 8)) lines.push(`  ${area.ms.toFixed(0).padStart(6)} ms  ${area.name}`)
  return lines.join('\n')
}

/** The whole --profile report: each scenario's CPU per request, the differences, and start-up. */
export function fullProfileReport(scenarios: ProfiledScenario[], startups: Array<{ name: string; file: string; startupMs: number }>): string {
  const report = profileReport(scenarios, [
    ['list.pat-write', 'list.baseline'],
    ['deep.pat-write', 'deep.baseline'],
    ['site.pat-write', 'site.bare'],
    ['site.baseline', 'site.bare'],
    ['site.basic-remembered', 'site.pat-write'],
    ['list.basic-remembered', 'list.pat-write'],
    ['site.legacy', 'site.pat-write'],
    ['site.none', 'site.bare'],
    ['scale.service.1000000', 'scale.service.10000'],
    ['scale.service.10000', 'scale.baseline.10000'],
    ['scale.baseline.1000000', 'scale.baseline.10000'],
    ['tokens.100000', 'tokens.10000'],
  ])
  const startupLines = startups.map((s) => startupReport(s.name, s.file, s.startupMs))
  // node refuses --cpu-prof in NODE_OPTIONS, the only way to give the single executable a node option.
  return `${report}\nStart-up (profiled, so slower than unprofiled)\n\n${startupLines.join('\n\n')}\n\nThe single executable is not profiled: node takes --cpu-prof on its command line only, and the executable's command line is the service's.\n`
}
