// How a PostgreSQL engine lets the requests that arrive go on (Engine.requestArrived), and the one
// read it shares among them (port.onArrival): docs/decisions.md, "One round trip to authenticate".

/**
 * The requests that arrive, admitted together: those that arrived in one turn of the event loop
 * are let go on once the turn has read every socket (in its check phase), as one generation. A read
 * made on arrival (port.onArrival) is shared by the requests of the generation that started it and
 * by no later one, so it always started after the requests that use it had arrived: nothing that
 * committed before a request arrived can be missing from what it reads. Nothing is remembered.
 */
export function arrivals() {
  let generation = 0
  let arriving: Array<() => void> = []
  const admitArrived = () => {
    const admitted = arriving
    arriving = []
    generation++
    for (const admit of admitted) admit()
  }
  return {
    arrived(admit: () => void) {
      arriving.push(admit)
      if (arriving.length === 1) setImmediate(admitArrived)
    },
    shared<V>(load: (key: string) => Promise<V>): (key: string) => Promise<V> {
      const reading = new Map<string, Promise<V>>()
      let readingOf = generation
      return (key) => {
        if (readingOf !== generation) {
          reading.clear()
          readingOf = generation
        }
        let read = reading.get(key)
        if (read === undefined) {
          const started = (read = load(key))
          reading.set(key, started)
          // Settled, it is let go: a later call reads again.
          const forget = () => void (reading.get(key) === started && reading.delete(key))
          started.then(forget, forget)
        }
        return read
      }
    },
  }
}

export type Arrivals = ReturnType<typeof arrivals>
