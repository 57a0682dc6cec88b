import fp from 'fastify-plugin'
import { refusalResponse, type Refusal } from './refusals.ts'

declare module 'fastify' {
  interface FastifyReply {
    /** Sends a refusal of the authentication path with its challenge header and body. */
    refuse(permalink: string, refusal: Refusal): FastifyReply
  }
}

/** The WWW-Authenticate challenge builder, as a reply decorator bound to the configured addresses. */
export default fp(
  async (fastify) => {
    const { urls } = fastify
    fastify.decorateReply('refuse', function (permalink: string, refusal: Refusal) {
      const { status, headers, body } = refusalResponse(refusal, permalink, urls)
      return this.code(status).headers(headers).send(body)
    })
  },
  { name: 'challenge', fastify: '5.x', dependencies: ['config'] },
)
