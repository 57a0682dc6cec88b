// The counting behind tools/test/engine-coverage.ts: what a test file ran of the engine code, from
// V8's coverage, and which files keep every part of it run on PostgreSQL (docs/development.md,
// "What runs where").
/**
 * The code whose paths the engines take differently: each part of it any PostgreSQL file runs must
 * stay run there. The stores and the engines' own code, the database's plugin, and what the
 * engines' errors mean; not what only reads an address or a key (lib/database-address.ts,
 * lib/server-key.ts), which runs the same whatever answers.
 */
export const ENGINE_CODE = /^(db\/|plugins\/database\.ts$|lib\/database-errors\.ts$)/

/** Files kept on both engines for what they are: comparisons of the engines, and several processes on one database. */
export const KEPT_BY_KIND = /^test\/(db|multiprocess)\//

/** One function of V8's coverage of a script (its ranges, the function's own first, then its blocks). */
export interface CoveredFunction {
  ranges: Array<{ startOffset: number; endOffset: number; count: number }>
}

/**
 * The offsets of a script that ran, from V8's coverage of its functions: each offset takes the
 * count of the innermost range around it (a block inside a function that ran may not have).
 */
export function ranOffsets(functions: CoveredFunction[]): Uint8Array {
  const ranges = functions.flatMap((f) => f.ranges)
  const length = ranges.reduce((most, r) => Math.max(most, r.endOffset), 0)
  const ran = new Uint8Array(length)
  // Outer ranges first: a range nested in another comes after it, and paints over it.
  ranges.sort((a, b) => a.startOffset - b.startOffset || b.endOffset - a.endOffset)
  for (const r of ranges) ran.fill(r.count > 0 ? 1 : 0, r.startOffset, r.endOffset)
  return ran
}

/** What one test file ran of each source (a path from the root). */
export type Ran = Map<string, Uint8Array>

/** The offsets `file` ran that `already` has not, by source. */
export function gainOf(file: Ran, already: Ran): Map<string, number[]> {
  const gain = new Map<string, number[]>()
  for (const [source, ran] of file) {
    const had = already.get(source)
    const offsets: number[] = []
    for (let i = 0; i < ran.length; i++) if (ran[i] && !had?.[i]) offsets.push(i)
    if (offsets.length > 0) gain.set(source, offsets)
  }
  return gain
}

export function addTo(already: Ran, file: Ran): void {
  for (const [source, ran] of file) {
    const had = already.get(source) ?? new Uint8Array(0)
    const union = new Uint8Array(Math.max(had.length, ran.length))
    union.set(had)
    for (let i = 0; i < ran.length; i++) if (ran[i]) union[i] = 1
    already.set(source, union)
  }
}

/** A file to keep, with the offsets of engine code it runs that the files picked before it do not. */
export interface Picked {
  file: string
  gain: Map<string, number[]>
  byKind: boolean
}

/**
 * The files to keep, in the order picked: `kept` first, then, while any file runs something the
 * picked ones do not, the one that runs the most of it for each second it takes (`seconds`). Each
 * with what it added, by source, in offsets. The files not in the answer add nothing.
 */
export function pickFiles(ran: Map<string, Ran>, seconds: Map<string, number>, kept: string[]): Picked[] {
  const picked: Picked[] = []
  const already: Ran = new Map()
  for (const file of kept) {
    const fileRan = ran.get(file) ?? new Map()
    picked.push({ file, gain: gainOf(fileRan, already), byKind: true })
    addTo(already, fileRan)
  }
  const left = new Set([...ran.keys()].filter((file) => !kept.includes(file)))
  for (;;) {
    let best: { file: string; gain: Map<string, number[]>; worth: number } | undefined
    for (const file of left) {
      const gain = gainOf(ran.get(file)!, already)
      const total = [...gain.values()].reduce((sum, offsets) => sum + offsets.length, 0)
      const worth = total / Math.max(seconds.get(file) ?? 1, 0.1)
      if (total > 0 && (!best || worth > best.worth)) best = { file, gain, worth }
    }
    if (!best) return picked
    picked.push({ file: best.file, gain: best.gain, byKind: false })
    addTo(already, ran.get(best.file)!)
    left.delete(best.file)
  }
}

/** The lines (1-based) of `text` that hold an offset of `offsets`. */
export function linesOf(text: string, offsets: Iterable<number>): number[] {
  const starts = [0]
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1)
  const lines = new Set<number>()
  for (const offset of offsets) {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid]! <= offset) lo = mid
      else hi = mid - 1
    }
    lines.add(lo + 1)
  }
  return [...lines].sort((a, b) => a - b)
}
