// A site's permalink is the <site> of every path, so it must be safe in a URL and must not shadow
// a top-level path of the service itself.

const PERMALINK = /^[a-z0-9_-]{1,63}$/

// Top-level words the service uses or may use for itself. Words with a dot (`.well-known`,
// `openapi.json`, `favicon.ico`) are already outside the permalink alphabet.
export const RESERVED_PERMALINKS = new Set([
  'admin',
  'api',
  'assets',
  'docs',
  'healthz',
  'login',
  'logout',
  'metrics',
  'oauth',
  'openapi',
  'static',
  'token_leaks',
  'well-known',
])

/** Why a permalink is refused, or null when it is fine. */
export function permalinkProblem(permalink: string): string | null {
  if (!PERMALINK.test(permalink)) {
    return 'a site name must be 1 to 63 characters of lowercase letters, digits, "-" and "_"'
  }
  if (RESERVED_PERMALINKS.has(permalink)) return `"${permalink}" is reserved by the service itself`
  return null
}
