import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { SiteParams } from '../schemas.ts'

export const SiteResource = Type.Object({
  name: Type.String(),
  permalink: Type.String(),
  href: Type.String(),
  html_href: Type.String(),
  discussions_href: Type.String(),
  api_tokens_url: Type.String(),
})

/** GET and HEAD {base_url}/<site>: the site resource, the entry point that links to the rest. */
const siteRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { urls } = fastify
  fastify.get('/:site', { schema: { params: SiteParams, response: { 200: SiteResource } } }, async (request) => {
    const { site } = request.auth!
    return {
      name: site.name,
      permalink: site.permalink,
      href: urls.site(site.permalink),
      html_href: urls.siteWeb(site.permalink),
      discussions_href: urls.discussions(site.permalink),
      api_tokens_url: urls.apiTokensPage(site.permalink),
    }
  })
}

export default siteRoutes
