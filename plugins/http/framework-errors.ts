import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { redactUrl } from '../../lib/redact.ts'
import type { RefusalFields, RefusalKind, RefusalLog } from '../../lib/refusals.ts'
import { clientErrorBody } from './validation.ts'

// Taken as Node's own module, not imported: node:http imported as an ES module evaluates each of
// its lazy exports, and one of them loads Node's fetch (undici: 760 KB of source, 20 ms at start
// and megabytes of heap) into a service that never fetches.
const { STATUS_CODES } = process.getBuiltinModule('node:http')

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

/** Node's socket of a connection, with the answer in flight on it (Node's own handler reads it so). */
type ClientSocket = Socket & { _httpMessage?: ServerResponse | null }

/**
 * What a parser error means, for the refusal log: a timeout (of the headers when no request is in
 * flight on the connection, else of the whole request), a client gone before the end of its
 * request, headers too large, or bytes that are not HTTP. A reset connection between requests, or
 * after its request arrived whole, refused nothing: null.
 */
function refusalOf(code: string | undefined, inFlight: IncomingMessage | undefined): [RefusalKind, RefusalFields] | null {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [inFlight ? 'request_timeout' : 'headers_timeout', {}]
    case 'ECONNRESET':
      return inFlight && !inFlight.complete ? ['client_gone', { during: 'body' }] : null
    case 'HPE_INVALID_EOF_STATE':
      return ['client_gone', { during: inFlight ? 'body' : 'headers' }]
    case 'HPE_HEADER_OVERFLOW':
      return ['headers_too_large', {}]
    default:
      return ['not_http', { code }]
  }
}

/**
 * Fastify's `clientErrorHandler` option: what Node's HTTP parser refused, and a request cut by the
 * headers or the request timeout, is answered on the raw socket (unless an answer has begun there
 * already), which is then closed, as Fastify's own handler does; and each is a refusal logged with
 * the client address. Without a refusal log (the fuzzers call it so), nothing is logged.
 */
export function createClientErrorHandler(refusals?: Pick<RefusalLog, 'record'>) {
  return function clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
    const answering = (socket as ClientSocket)._httpMessage ?? undefined
    const request = answering?.req
    // A reset or destroyed connection has nobody left to answer.
    const gone = error.code === 'ECONNRESET' || socket.destroyed
    const answer = PARSER_ERRORS[error.code!] ?? NOT_HTTP
    const answered = !gone && socket.writable && !answering?.headersSent
    const refusal = refusals && refusalOf(error.code, request)
    if (refusals && refusal) {
      const line = request ? { method: request.method, url: redactUrl(String(request.url)) } : {}
      refusals.record(refusal[0], { address: socket.remoteAddress, ...(answered ? { status: answer[0] } : {}), ...line, ...refusal[1] })
    }
    if (gone) return
    if (answered) answerOnSocket(socket, answer)
    socket.destroy(error)
  }
}

/** The handler without a refusal log. */
export const clientErrorHandler = createClientErrorHandler()

/** Writes one JSON refusal on a raw socket and closes it after. */
function answerOnSocket(socket: Socket, [status, code, message]: [number, string, string]) {
  const body = JSON.stringify({ error: code, message })
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}

const NO_TUNNEL: [number, string, string] = [405, 'method_not_allowed', 'This server is not a proxy: CONNECT is not allowed.']

/**
 * The HTTP server's 'connect' listener. Node hands a CONNECT request to this event instead of to
 * Fastify, and closes the socket without a word when nothing listens: it gets 405 in the JSON
 * error shape, and a log line.
 */
export function refuseConnect(refusals: Pick<RefusalLog, 'record'>) {
  return (_request: IncomingMessage, socket: Socket) => {
    refusals.record('connect', { method: 'CONNECT', address: socket.remoteAddress, status: 405 })
    if (socket.writable) answerOnSocket(socket, NO_TUNNEL)
    socket.end()
  }
}
