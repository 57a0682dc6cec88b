import { PERSONAL_TOKEN_PREFIX } from './token-format.ts'

// Query parameters that carry credentials, and so never reach a log line.
const SECRET_PARAMS = new Set(['auth', 'sso', 'access_token'])

/** The request URL as it may be logged: credential values in the query string replaced. */
export function redactUrl(url: string): string {
  const mark = url.indexOf('?')
  if (mark === -1) return url
  const query = url
    .slice(mark + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const name = eq === -1 ? pair : pair.slice(0, eq)
      let decoded = pair
      try {
        decoded = decodeURIComponent(pair.replace(/\+/g, ' '))
      } catch {
        // An undecodable pair is judged on its raw text.
      }
      const secret = SECRET_PARAMS.has(name.toLowerCase()) || decoded.includes(PERSONAL_TOKEN_PREFIX)
      return secret ? `${name}=[redacted]` : pair
    })
    .join('&')
  return `${url.slice(0, mark)}?${query}`
}
