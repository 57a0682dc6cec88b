/**
 * A refusal the caller can act on (unknown site, duplicate email, a 21st token...). Its message is
 * one clear sentence meant for the person at the keyboard; `field` names the form field at fault.
 */
export class StoreError extends Error {
  readonly code: 'not_found' | 'conflict' | 'invalid' | 'limit' | 'forbidden'
  readonly field: string | undefined

  constructor(message: string, code: StoreError['code'], field?: string) {
    super(message)
    this.name = 'StoreError'
    this.code = code
    this.field = field
  }
}
