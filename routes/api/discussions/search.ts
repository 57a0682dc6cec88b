import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { notModified, siteVersion } from '../../../plugins/http/conditional.ts'
import { InvalidRequestBody, SiteParams } from '../../schemas.ts'
import type { DiscussionContext } from './context.ts'
import { PER_PAGE, SearchListing, SearchQuery } from './schemas.ts'
import { envelope, pageLinks } from './views.ts'

/**
 * GET and HEAD {base_url}/<site>/search?q=: the site's discussions that match a query, best
 * first, a page of 30, each with a snippet of where it matches (docs/decisions.md, "Search"). The
 * staff's search: internal notes are searched too. A query that cannot be read is a 400 saying why.
 */
const searchRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, { views }) => {
  const { urls, discussionSearch } = fastify

  fastify.get(
    '/:site/search',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'searchDiscussions',
        summary: 'Search the discussions: words, phrases, exclusions and filters',
        params: SiteParams,
        querystring: SearchQuery,
        response: { 200: SearchListing, 400: InvalidRequestBody },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      // As the listing: an unchanged site answers a poll before anything is read.
      if (notModified(request, reply, siteVersion(site.version))) return reply
      const { q, page = 1 } = request.query
      const found = await discussionSearch.find({ siteId: site.id, searcher: { staff: true, userId: user.id }, q, offset: (page - 1) * PER_PAGE, limit: PER_PAGE })
      reply.header('link', pageLinks(`${urls.site(site.permalink)}/search`, { q }, page, found.total))
      return {
        ...envelope(page, found.total),
        capped: found.capped,
        results: found.results.map(({ discussion, snippet }) => ({ discussion: views.discussion(site.permalink, discussion), snippet })),
      }
    },
  )
}

export default searchRoutes
