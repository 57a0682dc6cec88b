import { AsyncLocalStorage } from 'node:async_hooks'

// One SQLite connection serves every request of the process, and a store written once for both
// engines awaits between its statements (db/port.ts). A transaction then stays open across those
// awaits, and whatever else runs meanwhile on the connection would run inside it: a write of
// another request rolled back with it, or a read of what it has not committed. The gate keeps
// them apart (docs/decisions.md, "One store, two engines"):
// - every call of a store method is a share of the connection; shares run side by side, as reads
//   and single-statement writes may;
// - a transaction waits until no share is running, then has the connection alone until it ends,
//   and the shares asked for meanwhile wait for it, in the order asked;
// - code inside a share or a transaction is recognised (AsyncLocalStorage) and goes on without
//   waiting: a store method calling another, or the transaction's own statements. A share that
//   opens a transaction lets go of its share while it waits, so it never waits on itself.

interface Hold {
  readonly exclusive: boolean
  /** Still held: the context outlives the hold in callbacks it scheduled (a timer), which must wait like anyone. */
  live: boolean
}

interface Waiter {
  readonly exclusive: boolean
  readonly admit: () => void
}

export class Gate {
  #shares = 0
  #exclusive = false
  readonly #waiting: Waiter[] = []
  readonly #holds = new AsyncLocalStorage<Hold>()

  /** Whether the running code is inside a transaction of this gate. */
  get inExclusive(): boolean {
    return this.#held()?.exclusive === true
  }

  /**
   * Whether a share asked for now would go in at once, and nothing that needs the connection alone
   * holds it or waits for it: a single synchronous read may then run without taking a share.
   */
  get open(): boolean {
    return !this.#exclusive && this.#waiting.length === 0
  }

  /** Whether the first in line waits to have the connection alone (a transaction): it goes in next. */
  get exclusiveNext(): boolean {
    return this.#waiting[0]?.exclusive === true
  }

  /** Runs `work` as a share of the connection. */
  shared<T>(work: () => Promise<T>): Promise<T> {
    return this.#held() ? work() : this.#within(false, work)
  }

  /** Runs `work` with the connection alone; inside a transaction already, at once (the caller nests it). */
  async exclusive<T>(work: () => Promise<T>): Promise<T> {
    const held = this.#held()
    if (held?.exclusive) return work()
    if (!held) return this.#within(true, work)
    // A share asking for a transaction: its share is let go while it waits and taken again after.
    held.live = false
    this.#leave(false)
    try {
      return await this.#within(true, work)
    } finally {
      if (!this.#enterNow(false)) await this.#queue(false)
      held.live = true
    }
  }

  /** Runs `work` once admitted, as a share or alone, recognised as such by the code it calls. */
  async #within<T>(exclusive: boolean, work: () => Promise<T>): Promise<T> {
    if (!this.#enterNow(exclusive)) await this.#queue(exclusive)
    const hold: Hold = { exclusive, live: true }
    try {
      return await this.#holds.run(hold, work)
    } finally {
      hold.live = false
      this.#leave(exclusive)
    }
  }

  #held(): Hold | undefined {
    const hold = this.#holds.getStore()
    return hold?.live ? hold : undefined
  }

  /** Enters at once when nothing stands in the way and nobody waits before; whether it did. */
  #enterNow(exclusive: boolean): boolean {
    if (this.#waiting.length > 0 || this.#exclusive || (exclusive && this.#shares > 0)) return false
    this.#take(exclusive)
    return true
  }

  /** Resolves once admitted, in the order asked. */
  #queue(exclusive: boolean): Promise<void> {
    return new Promise((admit) => this.#waiting.push({ exclusive, admit }))
  }

  #take(exclusive: boolean): void {
    if (exclusive) this.#exclusive = true
    else this.#shares++
  }

  #leave(exclusive: boolean): void {
    if (exclusive) this.#exclusive = false
    else this.#shares--
    // The first in line goes in when it can, and the shares right behind it with it.
    while (this.#waiting.length > 0 && !this.#exclusive) {
      const next = this.#waiting[0]
      if (next.exclusive && this.#shares > 0) return
      this.#waiting.shift()
      this.#take(next.exclusive)
      next.admit()
    }
  }
}
