import { STATUS_CODES, type IncomingMessage } from 'node:http'
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
  answerOnSocket(socket, PARSER_ERRORS[error.code ?? ''] ?? NOT_HTTP)
  socket.destroy(error)
}

/** Writes one JSON refusal on a raw socket and closes it after. */
function answerOnSocket(socket: Socket, [status, code, message]: [number, string, string]) {
  const body = JSON.stringify({ error: code, message })
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
}

const NO_TUNNEL: [number, string, string] = [405, 'method_not_allowed', 'This server is not a proxy: CONNECT is not allowed.']

/**
 * The HTTP server's 'connect' listener. Node hands a CONNECT request to this event instead of to
 * Fastify, and closes the socket without a word when nothing listens: it gets 405 in the JSON
 * error shape, and a log line.
 */
export function refuseConnect(log: { warn(fields: object, message: string): void }) {
  return (_request: IncomingMessage, socket: Socket) => {
    log.warn({ method: 'CONNECT', address: socket.remoteAddress, status: 405 }, 'CONNECT refused')
    answerOnSocket(socket, NO_TUNNEL)
    socket.end()
  }
}
