import { isUniqueViolation } from '../../lib/database-errors.ts'

/**
 * A refusal the caller can act on (unknown site, duplicate email, a 21st token...). Its message is
 * one clear sentence meant for the person at the keyboard; `field` names the form field at fault.
 */
export class StoreError extends Error {
  readonly code: 'not_found' | 'conflict' | 'invalid' | 'limit' | 'forbidden' | 'precondition_failed' | 'too_large'
  readonly field: string | undefined

  constructor(message: string, code: StoreError['code'], field?: string) {
    super(message)
    this.name = 'StoreError'
    this.code = code
    this.field = field
  }
}

/** A change sent for a version of the record that is no longer its own (If-Match); `version` is the current one. */
export class VersionMoved extends StoreError {
  readonly version: number

  constructor(what: string, version: number) {
    super(`${what} has changed since the version this change was made for: read it again, then send the change with its new ETag`, 'precondition_failed')
    this.version = version
  }
}

/**
 * `work`, with a second thing of one name on a site (its unique index, whichever engine says so)
 * refused as a conflict naming `name`: "this site has a schedule named "Berlin" already".
 */
export async function namedOncePerSite<T>(what: string, name: string | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (name !== undefined && isUniqueViolation(error)) throw new StoreError(`this site has ${what} named "${name}" already`, 'conflict', 'name')
    throw error
  }
}
