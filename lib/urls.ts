// Every public address is built from the configured base and site URLs, never from the request's
// Host header (docs/decisions.md, "Deployment shape").

export interface Urls {
  /** {base_url}/<site> */
  site(permalink: string): string
  /** {base_url}/<site>/discussions */
  discussions(permalink: string): string
  /** {base_url}/.well-known/oauth-protected-resource/<site> */
  resourceMetadata(permalink: string): string
  /** {site_url} */
  siteWeb(permalink: string): string
  /** {site_url}/profile/api_tokens */
  apiTokensPage(permalink: string): string
}

export function createUrls(baseUrl: string, siteUrl: string): Urls {
  // A path segment that reached us may be anything; encoding keeps `"`, `\` and spaces out of the
  // addresses we put in headers and bodies.
  const segment = (permalink: string) => encodeURIComponent(permalink.toWellFormed())
  const siteWeb = (permalink: string) => siteUrl.replace('{site}', segment(permalink))
  return {
    site: (permalink) => `${baseUrl}/${segment(permalink)}`,
    discussions: (permalink) => `${baseUrl}/${segment(permalink)}/discussions`,
    resourceMetadata: (permalink) => `${baseUrl}/.well-known/oauth-protected-resource/${segment(permalink)}`,
    siteWeb,
    apiTokensPage: (permalink) => `${siteWeb(permalink)}/profile/api_tokens`,
  }
}

/** The site whose API a resource indicator names, by permalink, or undefined. */
export function permalinkOfResource(resource: string, baseUrl: string): string | undefined {
  if (!resource.startsWith(`${baseUrl}/`)) return undefined
  const rest = resource.slice(baseUrl.length + 1)
  if (!/^[a-z0-9_-]{1,63}$/.test(rest)) return undefined
  return rest
}
