import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { DiscussionRow } from '../../db/stores/discussion-listing.ts'
import { DAY_MS, shownMoment } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { claimedBy, holdsToken } from '../../lib/rating-link.ts'
import { RATING_DAYS, ratings, type Rating } from '../../lib/reports.ts'
import { pageData, refusalOf } from './pages.ts'

// Satisfaction (issue 69; docs/decisions.md, "Satisfaction"): {site_url}/help/rate/<token>, the
// link of the mail that resolves a discussion and of its page on the support site. The token is
// the credential (lib/rating-link.ts): whoever holds the link rates that discussion and no other.
// Following the link only shows the question with the choice made (mail scanners follow links);
// the customer's "Send" records it. Given or changed until RATING_DAYS after the resolution.

/** The longest comment a rating takes. */
export const MAX_RATING_COMMENT = 2000

const ratingRoutes: FastifyPluginAsync = async (fastify) => {
  const { discussions, secretBox, urls } = fastify
  const help = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/help`
  const notice = (request: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string) =>
    reply.page('help_notice', pageData(request, reply, { title, message, help: help(request) }), status)

  /** The discussion and resolution the link was made for; a page saying why not otherwise (and undefined). */
  async function linked(request: FastifyRequest, reply: FastifyReply) {
    const { site } = request.web
    const token = (request.params as { token: string }).token
    const claimed = claimedBy(token)
    const d = claimed && (await discussions.get(site.id, claimed.number).catch(() => undefined))
    if (!claimed || !d || !holdsToken(secretBox.digest, token, { siteId: site.id, discussionId: d.id, number: d.number, resolvedAt: claimed.resolvedAt })) {
      await notice(request, reply, 404, 'This link is not valid', 'Check that the whole link from the mail was opened; a link works for its own discussion only.')
      return undefined
    }
    if (!site.satisfactionOn) {
      await notice(request, reply, 410, 'Ratings are closed', `${site.name} no longer asks for ratings.`)
      return undefined
    }
    return { d, resolvedAt: claimed.resolvedAt, token }
  }

  function ratingPage(request: FastifyRequest, reply: FastifyReply, found: { d: DiscussionRow; resolvedAt: number; token: string }, chosen: string, comment: string, status = 200, error: string | null = null) {
    const { d, resolvedAt, token } = found
    return reply.page(
      'help_rate',
      pageData(request, reply, {
        title: 'How did we do?',
        discussion: { number: d.number, title: d.title },
        action: `${help(request)}/rate/${token}`,
        chosen: (ratings as readonly string[]).includes(chosen) ? chosen : d.rating ?? '',
        comment,
        rated: d.rating && d.ratedAt ? { rating: d.rating === 'good' ? 'Good' : 'Not good', when: shownMoment(d.ratedAt) } : null,
        until: shownMoment(new Date(resolvedAt + RATING_DAYS * DAY_MS)),
        error,
        maxComment: MAX_RATING_COMMENT,
        help: help(request),
      }),
      status,
    )
  }

  fastify.get('/help/rate/:token', async (request, reply) => {
    const found = await linked(request, reply)
    if (!found) return reply
    const { rating } = request.query as { rating?: unknown }
    return ratingPage(request, reply, found, typeof rating === 'string' ? rating : '', found.d.ratingComment)
  })

  fastify.post('/help/rate/:token', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const found = await linked(request, reply)
    if (!found) return reply
    const body = request.body as Record<string, unknown>
    const rating = typeof body.rating === 'string' ? body.rating : ''
    const comment = typeof body.comment === 'string' ? body.comment.trim() : ''
    if (!(ratings as readonly string[]).includes(rating)) return ratingPage(request, reply, found, '', comment, 400, 'Choose Good or Not good.')
    if (comment.length > MAX_RATING_COMMENT || holdsNul(comment)) return ratingPage(request, reply, found, rating, comment.slice(0, MAX_RATING_COMMENT), 400, `A comment is at most ${MAX_RATING_COMMENT} characters of text.`)
    const refused = await refusalOf(() => discussions.rate(request.web.site.id, found.d.number, found.resolvedAt, rating as Rating, comment))
    if (refused) return notice(request, reply, 410, 'Ratings are closed for this discussion', `${refused.message[0]!.toUpperCase()}${refused.message.slice(1)}.`)
    return notice(request, reply, 200, 'Thank you', `Your rating of “${found.d.title}” is recorded. You may change it until ${shownMoment(new Date(found.resolvedAt + RATING_DAYS * DAY_MS))} with the same link.`)
  })
}

export default ratingRoutes
