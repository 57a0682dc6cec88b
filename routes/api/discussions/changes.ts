import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Change as ChangeRow } from '../../../db/stores/changes.ts'
import { cursorOf, positionOf } from '../../../lib/cursors.ts'
import { InvalidRequest } from '../../../plugins/http/validation.ts'
import { InvalidRequestBody, SiteParams } from '../../schemas.ts'
import { commentExtras, type DiscussionContext } from './context.ts'
import { ChangeFeed, ChangesQuery } from './schemas.ts'

/** The most changes a page of the feed holds. */
export const CHANGES_PER_PAGE = 100

/**
 * Watches the site (in any process: db/engine.ts, SiteChanges) for at most `ms`: `changed`
 * resolves true at its first change, false when the time is up, the client goes away or the
 * server closes; `cancel` stops watching (resolving false if nothing was heard).
 */
function watchFor(watch: (handler: () => void) => () => void, request: FastifyRequest, ms: number, closing: Set<() => void>) {
  const { promise: changed, resolve } = Promise.withResolvers<boolean>()
  const done = (value: boolean) => {
    clearTimeout(timer)
    stop()
    request.raw.off('close', gone)
    closing.delete(gone)
    resolve(value)
  }
  const gone = () => done(false)
  const timer = setTimeout(gone, ms)
  const stop = watch(() => done(true))
  request.raw.on('close', gone)
  closing.add(gone)
  return { changed, cancel: gone }
}

/**
 * GET {base_url}/<site>/changes?after=<cursor>&wait=<seconds>: every create, change, comment,
 * delete and restore of the site's discussions in the order they were committed, a page of 100,
 * from any door and any process (docs/decisions.md, "Safe retries, cursors and the change feed").
 */
const changeRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, context) => {
  const { urls, changes, database } = fastify
  const { views } = context
  // A request waiting for a change ends when the server closes, as the live pages' streams do.
  const closing = new Set<() => void>()
  fastify.addHook('preClose', async () => {
    for (const end of closing) end()
  })

  fastify.get(
    '/:site/changes',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'listChanges',
        summary: "What changed in the site's discussions since a cursor, in commit order",
        params: SiteParams,
        querystring: ChangesQuery,
        response: { 200: ChangeFeed, 400: InvalidRequestBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const after = positionOf('changes', request.query.after ?? '', 0)
      if (after === undefined) throw new InvalidRequest([{ field: 'after', problem: 'is not a cursor of this change feed' }])
      const read = () => changes.after(site.id, after, CHANGES_PER_PAGE + 1)
      const wait = request.query.wait ?? 0
      const deadline = Date.now() + wait * 1000
      let page: ChangeRow[]
      for (;;) {
        // Long polling: watching before each read, so a change committed meanwhile is not missed.
        const watching = wait > 0 ? watchFor((handler) => database.siteChanges.watch(site.id, handler), request, Math.max(0, deadline - Date.now()), closing) : undefined
        page = await read()
        const again = page.length === 0 && watching !== undefined && (await watching.changed)
        watching?.cancel()
        if (!again) break
        // Others wrote while it waited: what they wrote is answered only while the credential
        // still holds (not revoked, its owner neither disabled nor taken off the staff), in any process.
        const refusal = await fastify.reauthenticate(request)
        if (refusal) {
          const { status, headers, body } = fastify.refusal(refusal, site.permalink)
          return (reply as FastifyReply).code(status).headers(headers).send(body)
        }
      }
      const more = page.length > CHANGES_PER_PAGE
      if (more) page = page.slice(0, CHANGES_PER_PAGE)
      const { discussions, comments } = await changes.about(page)
      const extras = await commentExtras(context, [...comments.values()])
      const next = cursorOf('changes', page.at(-1)?.seq ?? after)
      reply.header('link', `<${urls.site(site.permalink)}/changes?after=${next}>; rel="next"`)
      return {
        changes: page.map((change) => {
          // A discussion is never removed (a delete is a state; one deleted for good keeps its row), and
          // a comment removed takes its changes with it: each change's are there.
          const discussion = discussions.get(change.discussionId)!
          const comment = change.commentId === null ? undefined : comments.get(change.commentId)!
          return {
            cursor: cursorOf('changes', change.seq),
            type: change.kind,
            at: change.at.toISOString(),
            discussion: views.discussion(site.permalink, discussion),
            comment: comment ? views.comment(site.permalink, discussion.number, comment, extras(comment)) : null,
          }
        }),
        next_cursor: next,
        end_of_stream: !more,
      }
    },
  )
}

export default changeRoutes
