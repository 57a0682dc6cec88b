import { StoreError } from '../../../db/stores/errors.ts'
import { InvalidRequest } from '../../../plugins/http/validation.ts'

// The HTTP errors of the discussion routes. The app's error handler writes their body:
// { error: <code>, message: <message> }.

const STATUS = { not_found: 404, conflict: 409, forbidden: 403, limit: 429, precondition_failed: 412, too_large: 413 } as const

type Code = keyof typeof STATUS

/** `there is no X` becomes `There is no X.`: the one sentence a refusal's message is. */
export const sentence = (text: string) => `${text[0].toUpperCase()}${text.slice(1)}.`

function failure(code: Code, message: string) {
  return Object.assign(new Error(sentence(message)), { statusCode: STATUS[code], code })
}

/** 404 not_found, for what a route itself finds missing; `message` is a clause like a store's. */
export const notFound = (message: string) => failure('not_found', message)

/** A refusal of the stores, as the HTTP error it means; anything else unchanged. */
export function httpError(error: unknown): unknown {
  if (!(error instanceof StoreError)) return error
  if (error.code === 'invalid') return new InvalidRequest([{ field: error.field ?? 'request', problem: error.message }])
  return failure(error.code, error.message)
}
