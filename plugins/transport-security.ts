import fp from 'fastify-plugin'

// HTTP Strict Transport Security (RFC 6797): once a browser has seen this on an https answer, it
// uses https for the host for a year, so nobody on the path can serve it the plain-http pages or
// catch a credential sent in the clear. Browsers ignore it on plain http.
export const HSTS = 'max-age=31536000'

/** Whether HSTS is on by default: when the API or the supporter pages are served over https. */
export function hstsByDefault(baseUrl: string, siteUrl: string): boolean {
  return baseUrl.startsWith('https:') || siteUrl.startsWith('https:')
}

/**
 * Strict-Transport-Security on every answer, pages and API alike, when `enabled`. A deployment
 * whose TLS proxy sets the header itself turns this off with SERVICE_HSTS=off (config.ts).
 */
export default fp<{ enabled: boolean }>(
  async (fastify, { enabled }) => {
    if (!enabled) return
    // A hook with a callback, not async: no promise per request.
    fastify.addHook('onRequest', (_request, reply, done) => {
      reply.header('strict-transport-security', HSTS)
      done()
    })
  },
  { name: 'transport-security', fastify: '5.x' },
)
