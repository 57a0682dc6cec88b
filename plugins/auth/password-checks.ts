import { verifyPassword } from '../../lib/password.ts'

// Argon2 verification costs about 90 ms of a CPU and a thread of libuv's pool (4 threads unless
// UV_THREADPOOL_SIZE says otherwise, shared with file system and DNS work). A flood of password
// checks must not take all of them: at most `concurrency` run at once, at most `queue` more wait
// their turn in order, and any beyond that are told to come back (the caller answers 503).

export interface PasswordChecksOptions {
  concurrency: number
  queue: number
  verify?: (passwordHash: string, password: string) => Promise<boolean>
}

export function createPasswordChecks({ concurrency, queue, verify = verifyPassword }: PasswordChecksOptions) {
  let running = 0
  const waiting: Array<() => void> = []

  const checks = {
    /** What does the work; read at each check, so a test can put an instrumented one in its place. */
    verify,

    get running() {
      return running
    },
    get waiting() {
      return waiting.length
    },

    /** Whether the password matches the hash, once a slot is free; 'busy' when the queue is full. */
    async check(passwordHash: string, password: string): Promise<boolean | 'busy'> {
      if (running < concurrency) running++
      else if (waiting.length >= queue) return 'busy'
      // A finished check hands its slot straight to the first waiter, so `running` stays as it is.
      else await new Promise<void>((resolve) => waiting.push(resolve))
      try {
        return await checks.verify(passwordHash, password)
      } finally {
        const next = waiting.shift()
        if (next) next()
        else running--
      }
    },
  }
  return checks
}

export type PasswordChecks = ReturnType<typeof createPasswordChecks>
