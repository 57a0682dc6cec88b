import { randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { CommentVia } from '../db/values.ts'

// How a write through the API came (a comment's `via`): the MCP endpoint calls the API on the
// caller's behalf (routes/api/mcp/index.ts) and marks its calls with a header whose value is this
// process's own random secret, so no client can pass its writes off as an assistant's.

export const MCP_MARK_HEADER = 'x-service-desk-mcp-call'
export const MCP_MARK = randomBytes(18).toString('base64url')

/** `mcp` for a call the MCP endpoint made, `api` for any other. */
export const apiVia = (headers: IncomingHttpHeaders): CommentVia => (headers[MCP_MARK_HEADER] === MCP_MARK ? 'mcp' : 'api')
