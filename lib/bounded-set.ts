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
