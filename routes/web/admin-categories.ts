import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { actorOf } from '../actor.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/categories: the site's categories for its administrators (issue 67;
// docs/decisions.md, "Categories"), as the API's /<site>/categories has them: each with how many
// discussions it holds, renamed or made public on its row, removed by merging its discussions into
// another; a new one added below. Which are given in turn is on Administration -> Queue.

const NOTICES: Record<string, string> = {
  added: 'The category is added.',
  changed: 'The category is changed.',
  removed: 'The category is removed; its discussions moved.',
}
const STATUS: Record<string, number> = { conflict: 409, not_found: 404, invalid: 400 }

const adminCategoryRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, categories, discussions } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/categories`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/categories')] }
  const form = (request: FastifyRequest) => (request.body ?? {}) as Record<string, unknown>
  const text = (value: unknown) => (typeof value === 'string' ? value : '')

  async function categoriesPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const site = request.web.site
    const [{ categories: all }, counts] = await Promise.all([categories.list(site.id, 0, -1), discussions.counts.byCategory(site.id)])
    // Every discussion it holds, in any state: each moves when it is removed.
    const held = (id: number) => Object.values(counts.get(id) ?? {}).reduce((sum, n) => sum + n, 0)
    const rows = all.map((c) => ({ ...c, count: held(c.id), others: all.filter((o) => o.id !== c.id) }))
    const done = (request.query as { done?: unknown }).done
    return reply.page('admin_categories', pageData(request, reply, { title: 'Categories', rows, values: { name: '' }, notice: NOTICES[String(done)] ?? null, error: null, ...extra }), status)
  }

  /** Runs a change; a refusal of the store is the page again, saying why. */
  async function changed(request: FastifyRequest, reply: FastifyReply, done: string, work: () => Promise<unknown>, values = { name: '' }) {
    const error = await refusalOf(work, ['invalid', 'not_found', 'conflict'])
    if (!error) return reply.redirect(`${base(request)}?done=${done}`, 303)
    const what = error.field === 'into' && error.code === 'invalid' ? 'Where its discussions go' : 'The category'
    return categoriesPage(request, reply, STATUS[error.code]!, { error: sentence(`${what} ${error.message}`), values })
  }

  fastify.get('/admin/categories', { preHandler: requireAdministrator }, (request, reply) => categoriesPage(request, reply))

  fastify.post('/admin/categories', action, async (request, reply) => {
    const name = text(form(request).name)
    return changed(request, reply, 'added', () => categories.add(request.web.site.id, name, form(request).public === 'yes', actorOf(request)), { name })
  })

  fastify.post('/admin/categories/:id', action, async (request, reply) => {
    const id = wholeNumber((request.params as { id: string }).id, 10) ?? 0
    const body = form(request)
    if (body.remove === 'yes') {
      const into = body.into === undefined || body.into === '' ? null : (wholeNumber(body.into, 10) ?? 0)
      return changed(request, reply, 'removed', () => discussions.removeCategory(request.web.site.id, id, into, actorOf(request)))
    }
    return changed(request, reply, 'changed', async () => {
      const category = await categories.change(request.web.site.id, id, { name: text(body.name), public: body.public === 'yes' }, actorOf(request))
      if (!category) throw new StoreError('is not one of this site', 'not_found', 'category')
    })
  })
}

export default adminCategoryRoutes
