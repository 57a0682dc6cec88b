import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../../actor.ts'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { Category as CategoryRow } from '../../../db/stores/categories.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../../schemas.ts'
import { notModified, siteVersion } from '../../../plugins/http/conditional.ts'
import type { DiscussionContext } from './context.ts'
import { notFound } from './http-errors.ts'
import { listDiscussions } from './listing.ts'
import { Category, CategoryChange, CategoryListing, CategoryParams, DiscussionListing, ListingQuery, NewCategory, PageQuery, PER_PAGE, RemovedCategoryQuery } from './schemas.ts'
import { envelope, pageLinks } from './views.ts'

/**
 * The categories of a site, one category, and the discussions in one; made, changed and removed by
 * its administrators (docs/decisions.md, "Categories").
 */
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

  // Written by the site's administrators only (routes/api/administrators-only.ts says the same for whole scopes).
  const administrators = async (request: FastifyRequest) => {
    const { site, user } = request.auth!
    if (!(await users.isAdministrator(site.id, user.id))) throw Object.assign(new Error('Only administrators of this site can change its categories.'), { statusCode: 403, code: 'forbidden' })
  }
  const shown = async (site: { id: number; permalink: string }, category: CategoryRow) => views.category(site.permalink, category, (await discussions.counts.byCategory(site.id)).get(category.id))

  fastify.post(
    '/:site/categories',
    {
      schema: { tags: ['categories'], operationId: 'createCategory', summary: 'Make a category (administrators)', params: SiteParams, body: NewCategory, response: { 201: Category, 403: ErrorBody, 400: InvalidRequestBody, 415: ErrorBody } },
      preHandler: administrators,
    },
    async (request, reply) => {
      const { site } = request.auth!
      const made = await categories.add(site.id, request.body.name, request.body.public ?? false, actorOf(request))
      const category = request.body.round_robin ? (await categories.change(site.id, made.id, { roundRobin: true }, actorOf(request)))! : made
      const resource = await shown(site, category)
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )

  fastify.patch(
    '/:site/categories/:id',
    {
      schema: { tags: ['categories'], operationId: 'changeCategory', summary: 'Rename a category, make it public or not, give its new discussions in turn or not (administrators)', params: CategoryParams, body: CategoryChange, response: { 200: Category, 403: ErrorBody, 415: ErrorBody, ...response } },
      preHandler: administrators,
    },
    async (request) => {
      const site = request.auth!.site
      const { name, public: isPublic, round_robin: roundRobin } = request.body
      const category = await categories.change(site.id, request.params.id, { name, public: isPublic, roundRobin }, actorOf(request))
      if (!category) throw notFound(`there is no category ${request.params.id} on this site`)
      return shown(site, category)
    },
  )

  fastify.delete(
    '/:site/categories/:id',
    {
      schema: {
        tags: ['categories'],
        operationId: 'removeCategory',
        summary: 'Remove a category; its discussions move into the one named by into (administrators)',
        description: "A category that holds discussions (in any state) is merged: they move into `into`, each as a change of its category (the change feed and the webhooks tell of each), and the mailboxes that file into it file there. Without `into` it is a 409. The site's last category is kept (409).",
        params: CategoryParams,
        querystring: RemovedCategoryQuery,
        response: { 204: Type.Null(), 403: ErrorBody, 409: ErrorBody, ...response },
      },
      preHandler: administrators,
    },
    async (request, reply) => {
      const site = request.auth!.site
      await discussions.removeCategory(site.id, request.params.id, request.query.into ?? null, actorOf(request))
      return reply.code(204).send(null)
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
