import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import type { Clock } from '../lib/clock.ts'
import { createUrls, type Urls } from '../lib/urls.ts'

declare module 'fastify' {
  interface FastifyInstance {
    config: Pick<Config, 'baseUrl' | 'siteUrl'>
    urls: Urls
    clock: Clock
  }
}

export interface ConfigPluginOptions {
  config: Pick<Config, 'baseUrl' | 'siteUrl'>
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
