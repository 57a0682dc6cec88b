import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { redactHeaders, redactUrl, REDACTED_LOG_PATHS } from '../../lib/redact.ts'
import type { RefusalLog } from '../../lib/refusals.ts'

// The service's request log: JSON lines (pino, Fastify's logger), one per request, no secret.

/** SERVICE_LOG_LEVEL: pino's levels, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export const DEFAULT_LOG_LEVEL: LogLevel = 'info'

/**
 * One log line per request, written when it ends, with what it was and how it went (not two), at
 * `info`; an error at `error`. A body over the limit (413) is a refusal instead: one `warn` line
 * through the refusal log, counted with the others of its kind, so a burst of them is summarised.
 */
export class OneLinePerRequest extends LogController {
  readonly #refusals: Pick<RefusalLog, 'record'>

  constructor(refusals: Pick<RefusalLog, 'record'>) {
    super()
    this.#refusals = refusals
  }

  override incomingRequest() {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply) {
    if (!error && reply.statusCode === 413) {
      const fields = { address: request.ip, status: 413, method: request.method, url: redactUrl(request.url) }
      return this.#refusals.record('body_too_large', fields)
    }
    const line = { req: request, res: reply, responseTime: Math.round(reply.elapsedTime * 10) / 10 }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

export function loggerOptions(stream: { write(line: string): void }, level: LogLevel = DEFAULT_LOG_LEVEL): FastifyServerOptions['logger'] {
  return {
    level,
    stream,
    // Credential values in a query string are replaced; of the headers only the user agent is
    // written, and any code that logs headers anyway has the credential ones redacted: pino's
    // redaction at the top of a line and under `err`, the serializers under `req` and `res` (where
    // pino's would search every request's line for headers it never has).
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    serializers: {
      req: (value: unknown) => {
        const request = value as Partial<FastifyRequest> | undefined
        if (typeof request?.url !== 'string') return withHeadersRedacted(value)
        return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip, userAgent: request.headers?.['user-agent'] }
      },
      res: (value: unknown) => {
        const reply = value as Partial<FastifyReply> | undefined
        return typeof reply?.statusCode === 'number' ? { statusCode: reply.statusCode } : withHeadersRedacted(value)
      },
    },
  }
}

/** Anything else logged under `req` or `res` is left as it is, but for its headers' credentials. */
function withHeadersRedacted(value: unknown): Record<string, unknown> {
  const logged = value as Record<string, unknown>
  const headers = logged?.headers
  return headers && typeof headers === 'object' ? { ...logged, headers: redactHeaders(headers as Record<string, unknown>) } : logged
}
