import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { escapeHtml } from '../lib/html.ts'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { permalinkProblem } from '../lib/permalink.ts'
import { SECURITY_HEADERS } from '../plugins/views.ts'
import { wantsPage } from './web/queue.ts'

export const RootDocument = Type.Object({
  name: Type.String(),
  api_url_template: Type.String(),
  openapi_url: Type.String(),
})


/**
 * The page a browser gets at the bare address (issue 46): what the address is, and a way to a
 * site's sign-in by its name. Like the JSON, it lists no site: which sites exist is not told here.
 */
export function rootPage(baseUrl: string, siteUrl: string, problem: string | null = null): string {
  const example = escapeHtml(siteUrl.replace('{site}', 'your-site'))
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Service Desk</title>' +
    '<meta name="viewport" content="width=device-width, initial-scale=1"></head><body><main>' +
    '<h1>Service Desk</h1><p>This is the address of a help desk: its API, for scripts and integrations, and the pages of its sites.</p>' +
    `<h2>Support staff and customers</h2><p>Each site has its own pages, at <code>${example}</code>. Type the name of your site to sign in.</p>` +
    (problem ? `<p role="alert">${escapeHtml(problem)}</p>` : '') +
    '<form method="get" action="/login"><label for="site">Site</label> <input id="site" name="site" required maxlength="63" autocapitalize="none"> <button type="submit">Go to its sign-in</button></form>' +
    `<h2>Developers</h2><p>The API is at <code>${escapeHtml(baseUrl)}/&lt;site&gt;</code>, described by <a href="/openapi.json">its OpenAPI document</a>; ` +
    'how to use it, with a personal API token: <a href="/README.md">the README</a>.</p></main></body></html>'
  )
}

/**
 * GET {base_url}/: a small public pointer for people and tools that open the bare address, as JSON,
 * or as a page for a browser. It names no site, so it reveals nothing about which sites exist.
 */
const rootRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { baseUrl, siteUrl } = fastify.config
  const document = { name: 'Service Desk', api_url_template: `${baseUrl}/{site}`, openapi_url: `${baseUrl}/openapi.json` }
  const page = (reply: FastifyReply, status: number, problem: string | null = null) =>
    reply.code(status).headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(rootPage(baseUrl, siteUrl, problem))
  fastify.get('/', { schema: { response: { 200: RootDocument } } }, async (request, reply) => (wantsPage(request.raw) ? page(reply, 200) : document))
  // The form of that page: to the sign-in of the site named (a name that cannot be one is told so,
  // on the page to a browser, as the API's JSON error to anyone else).
  fastify.get('/login', async (request, reply) => {
    const site = String((request.query as { site?: unknown }).site ?? '').trim().toLowerCase()
    const problem = permalinkProblem(site)
    if (problem) {
      const message = `${site === '' ? 'Type the name of your site' : `"${site}" is not the name of a site`}: ${problem}.`
      return wantsPage(request.raw) ? page(reply, 400, message) : reply.code(400).send({ error: 'invalid_request', message })
    }
    return reply.redirect(`${fastify.urls.siteWeb(site)}/login`, 303)
  })
  // Browsers ask for it on every page; it is not a site.
  fastify.get('/favicon.ico', async (_request, reply) => reply.code(204).header('cache-control', 'public, max-age=86400').send())
}

export default rootRoutes
