// The stores' interface is asynchronous, whatever the engine: PostgreSQL's drivers answer with
// promises, and one interface serves both engines (docs/decisions.md, "One store interface, two
// engines"). better-sqlite3 answers synchronously, so the SQLite stores are written synchronously
// (a transaction is one synchronous run of code, which nothing else can enter) and the service sees
// them through this facade: the same methods, each answering a promise.

/** The asynchronous face of a store: every method answers a promise; nested stores alike. */
export type Async<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : T[K] extends object
      ? Async<T[K]>
      : T[K]
}

/** `store` with each method answering a promise (a throw becomes a rejection), nested objects alike. */
export function asyncFacade<T extends object>(store: T): Async<T> {
  const facade: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(store)) {
    if (typeof member === 'function') {
      facade[key] = (...args: unknown[]) => {
        try {
          return Promise.resolve(member(...args))
        } catch (error) {
          return Promise.reject(error)
        }
      }
    } else if (member !== null && typeof member === 'object') {
      facade[key] = asyncFacade(member)
    } else {
      facade[key] = member
    }
  }
  return facade as Async<T>
}
