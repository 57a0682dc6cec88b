import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { notModified, siteVersion } from '../../plugins/http/conditional.ts'
import { SiteParams } from '../schemas.ts'

export const SiteResource = Type.Object({
  name: Type.String(),
  permalink: Type.String(),
  href: Type.String(),
  html_href: Type.String(),
  discussions_href: Type.String({ description: 'Every discussion but the deleted and spam ones; /<number> shows one.' }),
  new_discussions_href: Type.String(),
  open_discussions_href: Type.String(),
  resolved_discussions_href: Type.String(),
  deleted_discussions_href: Type.String(),
  spam_discussions_href: Type.String({ description: 'The discussions marked spam: out of the queue until marked not spam.' }),
  categories_href: Type.String({ description: 'The categories; a discussion is created in one.' }),
  api_tokens_url: Type.String(),
  api_documentation_href: Type.String({ description: 'The OpenAPI 3.1 document of this API.' }),
})

/** GET and HEAD {base_url}/<site>: the site resource, the entry point that links to the rest. */
const siteRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { config, urls } = fastify
  fastify.get(
    '/:site',
    { schema: { tags: ['site'], operationId: 'getSite', summary: 'The site, with links to its discussions and categories', params: SiteParams, response: { 200: SiteResource } } },
    async (request, reply) => {
      const { site } = request.auth!
      if (notModified(request, reply, siteVersion(site.version))) return reply
      const discussions = urls.discussions(site.permalink)
      return {
        name: site.name,
        permalink: site.permalink,
        href: urls.site(site.permalink),
        // The supporter pages start at the site URL with a slash (the bare address is this resource).
        html_href: `${urls.siteWeb(site.permalink)}/`,
        discussions_href: discussions,
        new_discussions_href: `${discussions}/new`,
        open_discussions_href: `${discussions}/open`,
        resolved_discussions_href: `${discussions}/resolved`,
        deleted_discussions_href: `${discussions}/deleted`,
        spam_discussions_href: `${discussions}/spam`,
        categories_href: `${urls.site(site.permalink)}/categories`,
        api_tokens_url: urls.apiTokensPage(site.permalink),
        api_documentation_href: `${config.baseUrl}/openapi.json`,
      }
    },
  )
}

export default siteRoutes
