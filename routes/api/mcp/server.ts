import type { FastifyRequest } from 'fastify'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import packageJson from '../../../package.json' with { type: 'json' }
import { MCP_TEXT_BYTES, MCP_TOOLS, WRITE_TOOLS, type ApiRequest, type McpTool } from './tools.ts'

// The MCP side of {base_url}/<site>/mcp (index.ts): the SDK's server with the tools, loaded on the
// first MCP request (the SDK and zod cost about 150 ms and 30 MB that most processes never need).

export { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
export { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js'

interface JsonRpcCall {
  method?: unknown
  params?: { name?: unknown }
}

/** The tools/call messages of a request body (one message, or a batch) that name a write tool. */
export function writeToolsCalled(body: unknown): string[] {
  const messages = (Array.isArray(body) ? body : [body]) as JsonRpcCall[]
  return messages
    .filter((m) => m?.method === 'tools/call' && typeof m.params?.name === 'string' && WRITE_TOOLS.has(m.params.name))
    .map((m) => String(m.params!.name))
}

/** An API answer as a tool result: the JSON as structured content and as text; a refusal as a tool error. */
export function toolResult(status: number, body: string): CallToolResult {
  // A removal answers 204, nothing: done is all there is to say.
  if (status === 204) return { content: [{ type: 'text', text: 'Done.' }] }
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    json = { message: body.trim() }
  }
  if (status >= 400) {
    const { message, errors } = (json ?? {}) as { message?: string; errors?: Array<{ field: string; problem: string }> }
    const details = errors?.map((e) => `${e.field}: ${e.problem}`).join('; ')
    return { isError: true, content: [{ type: 'text', text: `The help desk refused (${status}): ${message ?? 'no reason given'}${details ? ` (${details})` : ''}` }] }
  }
  return { content: [{ type: 'text', text: JSON.stringify(json, null, 2) }], structuredContent: json as Record<string, unknown> }
}

/** An API answer: its status, body and type. */
export interface ApiAnswer {
  status: number
  body: string
  /** The body's bytes, for a file. */
  bytes: Buffer
  type: string | undefined
}

/**
 * A file the API answered, for the model: a text file's first MCP_TEXT_BYTES as text (a cut
 * character dropped, the cut said), anything else a refusal naming its type; an API refusal as any.
 */
export function fileResult({ status, body, bytes, type }: ApiAnswer): CallToolResult {
  if (status >= 400) return toolResult(status, body)
  if (!type?.startsWith('text/')) {
    return { isError: true, content: [{ type: 'text', text: `This attachment is ${type ?? 'of no type'}, not text: it is not read here. Its href downloads it.` }] }
  }
  const cut = bytes.length > MCP_TEXT_BYTES
  const text = new TextDecoder('utf-8').decode(bytes.subarray(0, MCP_TEXT_BYTES), { stream: cut })
  return { content: [{ type: 'text', text: cut ? `${text}\n\n[Cut: these are the first ${MCP_TEXT_BYTES / 1024} KB of ${bytes.length} bytes.]` : text }] }
}

/** The MCP server of one request, its tools answering through `callApi`, the API with the caller's credential. */
export function serverFor(request: FastifyRequest, callApi: (request: FastifyRequest, api: ApiRequest) => Promise<ApiAnswer>) {
  const server = new McpServer(
    { name: 'service-desk', title: `${request.auth!.site.name} (Service Desk)`, version: packageJson.version },
    { instructions: 'Tools to work the support queue of one help desk site: list and read discussions, reply (with a saved reply where one fits), resolve, move between categories, give a discussion to a supporter, tag it, copy people on its replies, mark spam and, for administrators, block or allow senders.' },
  )
  for (const tool of MCP_TOOLS as McpTool[]) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: false, openWorldHint: false },
      },
      async (args: Record<string, unknown>) => {
        // The audit trail: who, with which kind of token, which tool (never the token itself).
        request.log.info({ mcp: { tool: tool.name, user: request.auth!.user.id, credential: request.auth!.method } }, 'mcp tool call')
        const answer = await callApi(request, tool.request(args as never))
        return tool.answers === 'file' ? fileResult(answer) : toolResult(answer.status, answer.body)
      },
    )
  }
  return server
}
