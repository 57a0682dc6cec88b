import { holdsIssuedToken } from './token-format.ts'

// Query parameters that carry credentials, and so never reach a log line.
const SECRET_PARAMS = new Set(['auth', 'sso', 'access_token', 'code'])

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    // Undecodable text is judged as it is.
    return text
  }
}

const holdsToken = (text: string) => holdsIssuedToken(decode(text))

/**
 * The request URL as it may be logged: credential values in the query string replaced, and any
 * path segment, parameter name or value that holds a token the service issues (encoded or not) replaced.
 */
export function redactUrl(url: string): string {
  // Most URLs have no query and nothing encoded: a token would show as it is (every request's log line).
  if (!url.includes('?') && !url.includes('%') && !holdsIssuedToken(url)) return url
  const mark = url.indexOf('?')
  const path = (mark === -1 ? url : url.slice(0, mark))
    .split('/')
    .map((segment) => (holdsToken(segment) ? '[redacted]' : segment))
    .join('/')
  if (mark === -1) return path
  const query = url
    .slice(mark + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const name = eq === -1 ? pair : pair.slice(0, eq)
      if (holdsToken(name)) return '[redacted]'
      const secret = SECRET_PARAMS.has(decode(name).toLowerCase()) || holdsToken(pair)
      return secret ? `${name}=[redacted]` : pair
    })
    .join('&')
  return `${path}?${query}`
}

// The credential-bearing headers, wherever a log line might carry them.
const SECRET_HEADERS = ['authorization', 'x-service-auth', 'x-multipass', 'cookie', 'set-cookie']

/**
 * pino's redact paths: headers logged at the top of a line or under `err`. Under `req` and `res`
 * the log's serializers redact them (`redactHeaders`), so the line every request writes, which has
 * no headers, is not searched for them (plugins/http/request-log.ts).
 */
export const REDACTED_LOG_PATHS = ['headers', 'err.headers'].flatMap((holder) => SECRET_HEADERS.map((name) => `${holder}["${name}"]`))

/** Headers as they may be logged: the credential-bearing ones replaced, the rest kept. */
export function redactHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...headers }
  for (const name of SECRET_HEADERS) if (name in copy) copy[name] = '[redacted]'
  return copy
}
