import type { ServerResponse } from 'node:http'
import type { FastifyPluginAsync } from 'fastify'
import { isStaffRole } from '../../db/stores/staff.ts'
import { requireSupporter } from './pages.ts'
import { PAGE, whole } from './queue.ts'
import { PRESENCE_BEAT_MS, type PresenceState } from '../../plugins/presence.ts'

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
    // Words are told in the order they were sent: each waits for the one before it, since two
    // look-ups of the session may come back in either order (PostgreSQL's pool, a loaded machine:
    // who is here was once told [Gone, Marker] and then the older [Gone], and stayed wrong).
    let told: Promise<void> = Promise.resolve()
    const send = (text: string) =>
      (told = told.then(() =>
        fastify.sessions.find(sessionId!, site.id).then(
          (session) => (session && isStaffRole(session.role) ? write(text) : void stream.end()),
          (error: unknown) => {
            request.log.warn({ err: error }, 'the live stream could not check its session; it ends')
            stream.end()
          },
        ),
      ))
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
    // A discussion's page (?discussion=<number>) is told who else is on it, and says it is there.
    const present = whole((request.query as { discussion?: unknown }).discussion)
    const leave = present === undefined ? undefined : bePresent(site.id, present, request.web.user!, (text) => void send(text))
    stream.on('close', () => {
      stop()
      leave?.()
      clearInterval(heartbeat)
      clearTimeout(pending)
      streams.delete(stream)
    })
  })

  /**
   * The page of discussion `number` of the site, open for `user`: says so now and every PRESENCE_BEAT_MS to
   * every process, and tells `send` who else is there whenever that changes. Returns its leaving.
   */
  function bePresent(siteId: number, number: number, user: { id: number; name: string }, send: (text: string) => void) {
    const { presence } = fastify
    const say = (state: PresenceState) => presence.say({ site: siteId, number, user: user.id, name: user.name, state }).catch((error: unknown) => fastify.log.warn({ err: error }, 'a presence could not be told'))
    // Told when who is there changed: a word that changes nothing (a page's beat) is not told again.
    let shown: string | undefined
    const show = () => {
      const text = `event: presence\ndata: ${JSON.stringify({ others: presence.others(siteId, number, user.id) })}\n\n`
      if (text !== shown) send((shown = text))
    }
    const unwatch = presence.watch(siteId, number, show)
    show()
    void say('here')
    const beat = setInterval(() => void say('here'), PRESENCE_BEAT_MS)
    return () => {
      unwatch()
      clearInterval(beat)
      void say('left')
    }
  }

  // Typing in a discussion's reply form (views/assets/live.js), told to the others on its page.
  // (A page's route: a browser's Accept, as every form of the pages, routes/web/queue.ts.)
  fastify.post('/discussions/:number/presence', { ...PAGE, preHandler: [fastify.csrfProtection, requireSupporter] }, async (request, reply) => {
    const number = whole((request.params as { number: string }).number)
    if (number === undefined) return reply.code(404).send()
    const { user, site } = request.web
    await fastify.presence.say({ site: site.id, number, user: user!.id, name: user!.name, state: 'replying' })
    return reply.code(204).send()
  })
}

export default liveRoutes
