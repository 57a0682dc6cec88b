// The stores' interface is asynchronous, whatever the engine: PostgreSQL's drivers answer with
// promises, and one interface serves both engines (docs/decisions.md, "One store interface, two
// engines"). better-sqlite3 answers synchronously, so the SQLite stores are written synchronously
// (a transaction is one synchronous run of code, which nothing else can enter) and the service sees
// them through this facade: the same methods, each answering a promise.

/** The asynchronous face of a store: every method answers a promise; nested stores alike. */
export type Async<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : Async<T[K]>
}

/** What a store is made of: methods and nested stores (`legacyTokens`, `counts`), nothing else. */
export type StoreShape<T> = { [K in keyof T]-?: object }

/** `store` with each method answering a promise (a throw becomes a rejection), nested stores alike. */
export function asyncFacade<T extends StoreShape<T>>(store: T): Async<T> {
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
    } else {
      facade[key] = asyncFacade(member as StoreShape<object>)
    }
  }
  return facade as Async<T>
}
