import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../../schemas.ts'
import { notModified, siteVersion } from '../../../plugins/http/conditional.ts'
import type { DiscussionContext } from './context.ts'
import { notFound } from './http-errors.ts'
import { listDiscussions } from './listing.ts'
import { Category, CategoryChange, CategoryListing, CategoryParams, DiscussionListing, ListingQuery, PageQuery, PER_PAGE } from './schemas.ts'
import { envelope, pageLinks } from './views.ts'

/** GET and HEAD of the categories of a site, one category, and the discussions in one. */
const categoryRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, context) => {
  const { categories, discussions, views } = context
  const { urls, users } = fastify
  const response = { 400: InvalidRequestBody, 404: ErrorBody }

  async function find(siteId: number, id: number) {
    const category = await categories.find(siteId, id)
    if (!category) throw notFound(`there is no category ${id} on this site`)
    return category
  }

  fastify.get(
    '/:site/categories',
    {
      schema: {
        tags: ['categories'],
        operationId: 'listCategories',
        summary: 'List the categories of the site, by name',
        params: SiteParams,
        querystring: PageQuery,
        response: { 200: CategoryListing, 400: InvalidRequestBody },
      },
    },
    async (request, reply) => {
      const site = request.auth!.site
      if (notModified(request, reply, siteVersion(site.version))) return reply
      const page = request.query.page ?? 1
      const listed = await categories.list(site.id, (page - 1) * PER_PAGE, PER_PAGE)
      const counts = await discussions.counts.byCategory(site.id)
      reply.header('link', pageLinks(`${urls.site(site.permalink)}/categories`, {}, page, listed.total))
      return {
        ...envelope(page, listed.total),
        categories: listed.categories.map((c) => views.category(site.permalink, c, counts.get(c.id))),
      }
    },
  )

  fastify.get(
    '/:site/categories/:id',
    { schema: { tags: ['categories'], operationId: 'getCategory', summary: 'Show a category', params: CategoryParams, response: { 200: Category, ...response } } },
    async (request, reply) => {
      const site = request.auth!.site
      if (notModified(request, reply, siteVersion(site.version))) return reply
      const category = await find(site.id, request.params.id)
      return views.category(site.permalink, category, (await discussions.counts.byCategory(site.id)).get(category.id))
    },
  )

  fastify.patch(
    '/:site/categories/:id',
    {
      schema: { tags: ['categories'], operationId: 'changeCategory', summary: 'Give its new discussions to the supporters in turn, or not (administrators)', params: CategoryParams, body: CategoryChange, response: { 200: Category, 403: ErrorBody, ...response } },
      preHandler: async (request) => {
        const { site, user } = request.auth!
        if (!(await users.isAdministrator(site.id, user.id))) throw Object.assign(new Error('Only administrators of this site can change its categories.'), { statusCode: 403, code: 'forbidden' })
      },
    },
    async (request) => {
      const site = request.auth!.site
      const category = await categories.setRoundRobin(site.id, request.params.id, request.body.round_robin)
      if (!category) throw notFound(`there is no category ${request.params.id} on this site`)
      return views.category(site.permalink, category, (await discussions.counts.byCategory(site.id)).get(category.id))
    },
  )

  fastify.get(
    '/:site/categories/:id/discussions',
    {
      schema: {
        tags: ['categories'],
        operationId: 'listCategoryDiscussions',
        summary: 'List the discussions of a category in every state but deleted',
        params: CategoryParams,
        querystring: ListingQuery,
        response: { 200: DiscussionListing, ...response },
      },
    },
    async (request, reply) => {
      const site = request.auth!.site
      const category = await find(site.id, request.params.id)
      const address = `${views.categoryHref(site.permalink, category.id)}/discussions`
      return listDiscussions(context, users, request, reply, { state: 'live', categoryId: category.id }, address)
    },
  )
}

export default categoryRoutes
