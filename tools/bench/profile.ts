import { readFileSync } from 'node:fs'

// Summarises a V8 .cpuprofile (node --cpu-prof): where the samples fell, by function and by
// package or file, so a run's profile can be read without a browser.
// Usage: node --import tsx tools/bench/profile.ts FILE.cpuprofile [--top N]

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

/** node_modules/<package> (or @scope/package), a file of this repository, or a V8/Node bucket. */
export function area(url: string, functionName: string): string {
  if (!url) return `(${functionName || 'anonymous'})`
  const modules = url.lastIndexOf('node_modules/')
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/')
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  if (url.startsWith('node:')) return url
  const repo = url.indexOf('/work/')
  return repo >= 0 ? url.slice(repo).split('/').slice(3).join('/') : url
}

export interface ProfileSummary {
  totalMs: number
  byFunction: Array<{ name: string; ms: number }>
  byArea: Array<{ name: string; ms: number }>
  /** Inclusive time of frames whose function or area matches, for questions like "how long in sha256". */
  inclusive(match: (frame: Node['callFrame']) => boolean): number
}

/**
 * Self time by function and area. With `windows` (microseconds of the monotonic clock, which is
 * what process.hrtime reads and what V8 stamps samples with), only samples inside them count.
 */
export function summarise(profile: Profile, windows?: Array<[number, number]>): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0
    at += delta
    if (windows && !windows.some(([from, to]) => at >= from && at <= to)) continue
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + delta)
  }
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us)
  const functions = new Map<string, number>()
  const areas = new Map<string, number>()
  let total = 0
  for (const [id, us] of self) {
    const { callFrame: f } = byId.get(id)!
    total += us
    add(functions, `${f.functionName || '(anonymous)'} ${area(f.url, f.functionName)}:${f.lineNumber + 1}`, us)
    add(areas, area(f.url, f.functionName), us)
  }
  const sorted = (map: Map<string, number>) =>
    [...map].map(([name, us]) => ({ name, ms: us / 1000 })).sort((a, b) => b.ms - a.ms)
  return {
    totalMs: total / 1000,
    byFunction: sorted(functions),
    byArea: sorted(areas),
    inclusive(match) {
      let us = 0
      for (const [id, t] of self) {
        // A sample counts once if any frame on its stack matches.
        for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
          if (match(byId.get(at)!.callFrame)) {
            us += t
            break
          }
        }
      }
      return us / 1000
    },
  }
}

export function readProfile(file: string): Profile {
  return JSON.parse(readFileSync(file, 'utf8')) as Profile
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2]
  if (!file) {
    console.error('usage: node --import tsx tools/bench/profile.ts FILE.cpuprofile [--top N]')
    process.exit(2)
  }
  const topAt = process.argv.indexOf('--top')
  const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 25
  const summary = summarise(readProfile(file))
  const pct = (ms: number) => `${((ms / summary.totalMs) * 100).toFixed(1).padStart(5)}%`
  console.log(`${file}: ${summary.totalMs.toFixed(0)} ms sampled`)
  console.log('\nself time by package or file:')
  for (const a of summary.byArea.slice(0, top)) console.log(`${pct(a.ms)} ${a.ms.toFixed(1).padStart(9)} ms  ${a.name}`)
  console.log('\nself time by function:')
  for (const f of summary.byFunction.slice(0, top)) console.log(`${pct(f.ms)} ${f.ms.toFixed(1).padStart(9)} ms  ${f.name}`)
}
