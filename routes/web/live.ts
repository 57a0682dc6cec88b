import type { ServerResponse } from 'node:http'
import type { FastifyPluginAsync } from 'fastify'
import { isStaffRole } from '../../db/stores/staff.ts'
import { requireSupporter } from './pages.ts'

// The live pages (docs/decisions.md, "The team's queue"): {site_url}/live is a stream of
// Server-Sent Events that says "change" whenever the site's discussions changed, in this process
// or any other on the database (db/engine.ts, SiteChanges). It carries nothing else: the queue and
// discussion pages (views/assets/live.js) then read themselves again, with the session, as a
// reload would. Without JavaScript the pages work as before, by reloading.

/** Changes closer together than this are told as one. */
export const LIVE_COALESCE_MS = 150
/** A comment line this often keeps proxies from closing a quiet stream. */
export const LIVE_HEARTBEAT_MS = 25_000

const liveRoutes: FastifyPluginAsync = async (fastify) => {
  const streams = new Set<ServerResponse>()
  // A stream never ends by itself: the server's close ends them, or it would wait for them forever.
  fastify.addHook('preClose', async () => {
    for (const stream of streams) stream.end()
  })

  fastify.get('/live', { preHandler: requireSupporter }, async (request, reply) => {
    const { site, sessionId } = request.web
    const stream = reply.raw
    // Nothing is written once the stream is ended (by the server's close): a write after the end would be an error.
    const write = (text: string) => void (stream.writableEnded || stream.write(text))
    // Each word is told only while the session is still a supporter's: signed out, disabled or taken
    // off the staff (in any process), the stream ends instead, before it tells of another change.
    const send = (text: string) =>
      fastify.sessions.find(sessionId!, site.id).then(
        (session) => (session && isStaffRole(session.role) ? write(text) : stream.end()),
        (error: unknown) => {
          request.log.warn({ err: error }, 'the live stream could not check its session; it ends')
          stream.end()
        },
      )
    let pending: NodeJS.Timeout | undefined
    const tell = () => {
      pending ??= setTimeout(() => {
        pending = undefined
        void send('event: change\ndata: {}\n\n')
      }, LIVE_COALESCE_MS)
    }
    // Watching first: should it fail, the answer is still Fastify's to give (a 500), not a stream left open.
    const stop = fastify.database.siteChanges.watch(site.id, tell)
    reply.hijack()
    stream.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', 'x-content-type-options': 'nosniff' })
    stream.write('retry: 2000\n\n')
    const heartbeat = setInterval(() => void send(': still here\n\n'), LIVE_HEARTBEAT_MS)
    streams.add(stream)
    stream.on('close', () => {
      stop()
      clearInterval(heartbeat)
      clearTimeout(pending)
      streams.delete(stream)
    })
  })
}

export default liveRoutes
