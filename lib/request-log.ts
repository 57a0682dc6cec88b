import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { redactUrl, REDACTED_LOG_PATHS } from './redact.ts'

// The service's request log: JSON lines (pino, Fastify's logger), one per request, no secret.

/** One log line per request, written when it ends, with what it was and how it went (not two). */
export class OneLinePerRequest extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply) {
    const line = { req: request, res: reply, responseTime: Math.round(reply.elapsedTime * 10) / 10 }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

export function loggerOptions(stream: { write(line: string): void }): FastifyServerOptions['logger'] {
  return {
    level: 'info',
    stream,
    // Credential values in a query string are replaced; of the headers only the user agent is
    // written, and any code that logs headers anyway has the credential ones redacted.
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    // Anything else logged under `req` or `res` is left as it is, to the redaction above.
    serializers: {
      req: (value: unknown) => {
        const request = value as Partial<FastifyRequest> | undefined
        if (typeof request?.url !== 'string') return value as Record<string, unknown>
        return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip, userAgent: request.headers?.['user-agent'] }
      },
      res: (value: unknown) => {
        const reply = value as Partial<FastifyReply> | undefined
        return typeof reply?.statusCode === 'number' ? { statusCode: reply.statusCode } : (value as Record<string, unknown>)
      },
    },
  }
}
