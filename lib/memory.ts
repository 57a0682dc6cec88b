import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

// A service's start allocates much that dies young (hundreds of modules read, compiled and linked;
// the routes' schemas built), and V8 grows its young generation to fit: 64 MB of semi-spaces that
// the heap then keeps while the service idles, a third of its resident memory (150 MB against 115
// once given back; measured 2026-12-05, docs/decisions.md, "Writes as light as reads (issue 75)").
// V8 gives them back by itself only when its memory reducer notices a quiet process, many seconds
// later. A collection of the last-resort kind, once the service listens, gives them back at once.

/** How long after it listens a started service gives back what its start grew: after its first requests, not in their way. */
export const SETTLE_AFTER_MS = 1_000

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void
let collect: Collect | undefined

/**
 * A full collection that also shrinks the heap's spaces to what they hold (about 0.1 s, once).
 * V8's `gc` is reached the way its flag allows at run time: the flag set, a fresh context's `gc`
 * kept, the flag unset again, so no other context (a template's, say) ever sees it.
 */
export function settleMemory(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc')
    collect = runInNewContext('gc') as Collect
    setFlagsFromString('--no-expose-gc')
  }
  collect({ type: 'major', execution: 'sync', flavor: 'last-resort' })
}
