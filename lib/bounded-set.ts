/**
 * A set that remembers at most `max` values, forgetting the oldest first: for in-memory
 * bookkeeping that must not grow without bound under hostile traffic.
 */
export function createBoundedSet<T>(max: number) {
  const values = new Set<T>()
  return {
    has: (value: T) => values.has(value),
    add(value: T): void {
      values.add(value)
      if (values.size > max) values.delete(values.values().next().value!)
    },
  }
}

/** A map that keeps at most `max` entries, forgetting the oldest first (a key set again keeps its place). */
export function createBoundedMap<K, V>(max: number) {
  const entries = new Map<K, V>()
  return {
    get: (key: K) => entries.get(key),
    set(key: K, value: V): void {
      entries.set(key, value)
      if (entries.size > max) entries.delete(entries.keys().next().value!)
    },
  }
}
