import fp from 'fastify-plugin'
import type { Clock } from '../lib/clock.ts'
import { createUrls, type Urls } from '../lib/urls.ts'

/** The public addresses of the service (config.ts checks them): every link is built from these. */
export interface PublicAddresses {
  /** Origin of the API, without a trailing slash. */
  baseUrl: string
  /** Address of a site's supporter web pages, with `{site}` where the permalink goes. */
  siteUrl: string
}

declare module 'fastify' {
  interface FastifyInstance {
    config: PublicAddresses
    urls: Urls
    clock: Clock
  }
}

export interface ConfigPluginOptions {
  config: PublicAddresses
  clock: Clock
}

/** The public addresses and the clock, shared by every other plugin. */
export default fp<ConfigPluginOptions>(
  async (fastify, { config, clock }) => {
    fastify.decorate('config', config)
    fastify.decorate('urls', createUrls(config.baseUrl, config.siteUrl))
    fastify.decorate('clock', clock)
  },
  { name: 'config', fastify: '5.x' },
)
