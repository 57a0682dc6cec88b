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
    /**
     * Reads by key, through `loadMany`: the keys asked for in one generation before its statement
     * starts (the requests of a generation reach their authentication in the same run of code, or
     * the microtasks after it) are read by one call; a key asked for again in the same generation
     * shares its read, until that read settles.
     */
    batched<V>(loadMany: (keys: string[]) => Promise<V[]>): (key: string) => Promise<V> {
      const reading = new Map<string, Promise<V>>()
      let readingOf = generation
      let gathering: Map<string, { resolve(value: V): void; reject(error: unknown): void }> | undefined
      const start = (batch: NonNullable<typeof gathering>) => {
        // The next key asked for starts another read (a microtask runs before the next admission).
        gathering = undefined
        const keys = [...batch.keys()]
        loadMany(keys).then(
          (values) => keys.forEach((key, i) => batch.get(key)!.resolve(values[i]!)),
          (error: unknown) => batch.forEach((waiting) => waiting.reject(error)),
        )
      }
      return (key) => {
        if (readingOf !== generation) {
          reading.clear()
          gathering = undefined
          readingOf = generation
        }
        let read = reading.get(key)
        if (read !== undefined) return read
        if (gathering === undefined) {
          const batch = (gathering = new Map())
          queueMicrotask(() => start(batch))
        }
        const batch = gathering
        const started = (read = new Promise<V>((resolve, reject) => batch.set(key, { resolve, reject })))
        reading.set(key, started)
        // Settled, it is let go: a later call reads again.
        const forget = () => void (reading.get(key) === started && reading.delete(key))
        started.then(forget, forget)
        return read
      }
    },
  }
}

export type Arrivals = ReturnType<typeof arrivals>
