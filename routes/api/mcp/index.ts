import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { MCP_MARK, MCP_MARK_HEADER } from '../../../lib/via.ts'
import { V1_MEDIA_TYPE } from '../../../lib/accept.ts'
import { mcpRequestGuard, mcpRequestProblem } from './request-guard.ts'
import type { ApiRequest } from './tools.ts'

// {base_url}/<site>/mcp: the help desk as an MCP server (issue 17; docs/decisions.md, "MCP"), on
// the official SDK's Streamable HTTP transport, stateless (a server and a transport per request,
// JSON answers), so any process of the service answers any request. It sits in the API's
// authenticated scope: the same authentication, challenges and body limit as every API route.
// Bearer tokens only (personal or OAuth); the token's site is the only site the tools see.

// At the top level: tsc rewrites the .ts of a dynamic import here for dist/, not inside the plugin.
const loadServer = () => import('./server.ts')

/** The path under the site that a redirect of the site's API names; undefined for any other place. */
export function movedPath(location: string, site: string): string | undefined {
  return location.startsWith(`${site}/`) ? location.slice(site.length) : undefined
}

const BEARER_METHODS: ReadonlySet<string> = new Set(['personal_token', 'oauth_token'])

export interface McpOptions {
  /** SERVICE_MCP_ALLOWED_ORIGINS: origins besides the service's own whose pages may call the endpoint. */
  allowedOrigins: readonly string[]
}

const mcpRoutes: FastifyPluginAsync<McpOptions> = async (fastify, { allowedOrigins }) => {
  const guard = mcpRequestGuard(fastify.config.baseUrl, fastify.config.siteUrl, allowedOrigins)

  /** A tool's request, made to the API of the caller's site with the caller's own credential. */
  async function callApi(request: FastifyRequest, api: ApiRequest, follow = true): Promise<{ status: number; body: string; bytes: Buffer; type: string | undefined }> {
    const { site } = request.auth!
    const res = await fastify.inject({
      method: api.method,
      url: `/${encodeURIComponent(site.permalink)}${api.path}`,
      headers: {
        authorization: request.headers.authorization!,
        accept: V1_MEDIA_TYPE,
        [MCP_MARK_HEADER]: MCP_MARK,
        ...(api.body ? { 'content-type': 'application/json' } : {}),
        ...(request.headers['user-agent'] ? { 'user-agent': request.headers['user-agent'] } : {}),
      },
      remoteAddress: request.ip,
      ...(api.body ? { payload: JSON.stringify(api.body) } : {}),
    })
    // A merged discussion's address redirects to the one it went into (routes/api/discussions/show.ts):
    // a read follows it, once, as a client would, so the model reads where the comments are.
    const moved = follow && res.statusCode === 307 && api.method === 'GET' ? movedPath(String(res.headers.location), fastify.urls.site(site.permalink)) : undefined
    if (moved !== undefined) return callApi(request, { ...api, path: moved }, false)
    return { status: res.statusCode, body: res.body, bytes: res.rawPayload, type: res.headers['content-type'] }
  }

  async function handle(request: FastifyRequest, reply: FastifyReply) {
    // Node joins a repeated header into one string (set-cookie aside), so these are strings.
    const { origin, 'mcp-protocol-version': protocolVersion } = request.headers as Record<string, string | undefined>
    const { serverFor, StreamableHTTPServerTransport, SUPPORTED_PROTOCOL_VERSIONS, writeToolsCalled } = await loadServer()
    const problem = mcpRequestProblem(guard, { origin, hostname: request.hostname, protocolVersion }, SUPPORTED_PROTOCOL_VERSIONS)
    if (problem) return reply.code(problem.status).send({ error: problem.error, message: problem.message })
    const auth = request.auth!
    if (!BEARER_METHODS.has(auth.method)) return refuse(request, reply, { kind: 'invalid_token' })
    // The MCP authorization specification's step-up: a write tool with read access is an HTTP 403
    // with the insufficient_scope challenge, not a tool error.
    if (auth.access === 'read' && writeToolsCalled(request.body).length > 0) return refuse(request, reply, { kind: 'insufficient_scope' })

    const server = serverFor(request, callApi)
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    reply.raw.on('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    // The headers the API's hooks set (no-store, Vary, the token's expiry) go with the SDK's answer.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value)
    reply.hijack()
    await transport.handleRequest(request.raw, reply.raw, request.body)
  }

  function refuse(request: FastifyRequest, reply: FastifyReply, refusal: { kind: 'invalid_token' | 'insufficient_scope' }) {
    const { status, headers, body } = fastify.refusal(refusal, request.auth!.site.permalink)
    return reply.code(status).headers(headers).send(body)
  }

  // A POST here reads or writes depending on the tools it calls: authenticated as a read, and a
  // write tool is checked above.
  // Not in the OpenAPI document: JSON-RPC is described by the MCP specification and the tools list.
  fastify.post('/:site/mcp', { schema: { hide: true }, config: { checksWriteAccess: true } }, handle)
  // Stateless: no stream to open with GET, no session to end with DELETE.
  fastify.route({
    method: ['GET', 'DELETE'],
    url: '/:site/mcp',
    schema: { hide: true },
    handler: async (_request, reply) =>
      reply
        .code(405)
        .header('allow', 'POST')
        .send({ error: 'method_not_allowed', message: 'This MCP endpoint is stateless: send each JSON-RPC message with POST.' }),
  })
}

export default mcpRoutes
