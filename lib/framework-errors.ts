import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { clientErrorBody } from './validation.ts'

// Fastify answers two kinds of bad input itself, before any route or error handler, each in a
// shape of its own ({"error": "Bad Request", "code": ..., "statusCode": ...}): a path it cannot
// route (bad percent-encoding, a segment over the length limit) and bytes Node's HTTP parser
// refuses (a control character in a header, headers too large). These give them the JSON error
// shape of every other refusal, found by the fuzzers of test/fuzz.

/** Fastify's `frameworkErrors` option: FST_ERR_BAD_URL (400) and FST_ERR_MAX_PARAM_LENGTH (414). */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  // Both carry their status (400 and 414); the app has no async constraint, the third kind.
  return reply.code(error.statusCode!).send(clientErrorBody(error))
}

const PARSER_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'The request was not received in time.'],
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'The request headers are larger than the server accepts.'],
}
const NOT_HTTP: [number, string, string] = [400, 'bad_request', 'The request is not valid HTTP/1.1.']

/**
 * Fastify's `clientErrorHandler` option: what Node's HTTP parser refused is answered on the raw
 * socket, which is then closed, as Fastify's own handler does.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [status, code, message] = PARSER_ERRORS[error.code ?? ''] ?? NOT_HTTP
  const body = JSON.stringify({ error: code, message })
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy(error)
}
