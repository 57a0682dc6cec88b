// The MCP transport's own rules for an HTTP request (MCP 2025-11-25, transports, "Security
// Warning"): a browser page of another origin must not drive the endpoint with a token it holds, and
// a DNS-rebound name must not reach a service listening on the loopback interface. Written here
// rather than through the SDK's transport options: those compare the whole Host header, port
// included, and answer before the API's JSON error shape (docs/decisions.md, "MCP").

export interface McpRequestGuard {
  /** Origins whose pages may call the endpoint: the service's own, and SERVICE_MCP_ALLOWED_ORIGINS. */
  origins: ReadonlySet<string>
  /** Host names a request may be addressed to. */
  hostnames: ReadonlySet<string>
}

/** The loopback names, which a DNS-rebinding page cannot make its browser send as Host. */
const LOOPBACK = ['localhost', '127.0.0.1', '[::1]', '::1']

export function mcpRequestGuard(baseUrl: string, siteUrl: string, allowedOrigins: readonly string[]): McpRequestGuard {
  const origins = new Set([new URL(baseUrl).origin, new URL(siteUrl.replace('{site}', 'site')).origin, ...allowedOrigins])
  const hostnames = new Set([...LOOPBACK, ...[...origins].map((origin) => new URL(origin).hostname)])
  return { origins, hostnames }
}

export type McpRequestProblem = { status: 400 | 403; error: string; message: string }

/**
 * What is wrong with a request's Origin, Host or MCP-Protocol-Version, or undefined. No Origin is a
 * client that is not a browser page, and is served; `Origin: null` (a sandboxed page, a file) is not
 * an origin of ours. The host name is the request's as Fastify reads it (X-Forwarded-Host only from
 * a trusted proxy).
 */
export function mcpRequestProblem(
  guard: McpRequestGuard,
  request: { origin: string | undefined; hostname: string; protocolVersion: string | undefined },
  supportedVersions: readonly string[],
): McpRequestProblem | undefined {
  if (request.origin !== undefined && !guard.origins.has(request.origin)) {
    return { status: 403, error: 'forbidden_origin', message: `Pages of ${JSON.stringify(request.origin)} may not call this MCP endpoint.` }
  }
  if (!guard.hostnames.has(request.hostname.toLowerCase())) {
    return { status: 403, error: 'forbidden_host', message: 'This MCP endpoint answers at the address the service is configured with only.' }
  }
  if (request.protocolVersion !== undefined && !supportedVersions.includes(request.protocolVersion)) {
    return {
      status: 400,
      error: 'unsupported_protocol_version',
      message: `MCP-Protocol-Version ${JSON.stringify(request.protocolVersion)} is not supported: use one of ${supportedVersions.join(', ')}.`,
    }
  }
  return undefined
}
