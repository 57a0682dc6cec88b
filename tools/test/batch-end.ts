// What a batch's files share and the batch closes once they have all run (tools/test/batch.ts):
// a list of closings, kept on the process so that the batch and the fixtures reach the same one
// without the batch importing the fixtures (a batch without a browser file loads no Playwright).

const KEY = Symbol.for('service-desk-tests.at-batch-end')

type Closing = () => Promise<unknown>

/** This process's list of closings when it runs a batch (`startBatch` made it), or undefined in a file run alone. */
export function atBatchEnd(): Closing[] | undefined {
  return (globalThis as Record<symbol, Closing[] | undefined>)[KEY]
}

/** Marks this process as a batch's: from now on `atBatchEnd` gives the list it will close. */
export function startBatch(): Closing[] {
  const closings: Closing[] = []
  ;(globalThis as Record<symbol, Closing[] | undefined>)[KEY] = closings
  return closings
}
