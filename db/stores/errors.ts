/**
 * A refusal the caller can act on (unknown site, duplicate email, a 21st token...). Its message is
 * one clear sentence meant for the person at the keyboard; `field` names the form field at fault.
 */
export class StoreError extends Error {
  constructor(
    message: string,
    readonly code: 'not_found' | 'conflict' | 'invalid' | 'limit' | 'forbidden',
    readonly field?: string,
  ) {
    super(message)
    this.name = 'StoreError'
  }
}
