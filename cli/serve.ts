import closeWithGrace from 'close-with-grace'
import { buildApp } from '../app.ts'
import { loadConfig, type Config } from '../config.ts'
import { V1_MEDIA_TYPE } from '../lib/accept.ts'
import { createUrls } from '../lib/urls.ts'
import { bootstrapFirstRun, type FirstRun } from '../store/bootstrap.ts'
import type { Command } from './command.ts'

export function firstRunBanner(config: Config, firstRun: FirstRun): string {
  const urls = createUrls(config.baseUrl, config.siteUrl)
  const permalink = firstRun.site.permalink
  return [
    '',
    `First run: site "${permalink}" is ready. This is shown once; keep what you need.`,
    '',
    `  API              ${urls.site(permalink)}`,
    `  Supporter pages  ${urls.siteWeb(permalink)}/login`,
    `  Sign in          ${firstRun.email}`,
    `  Password         ${firstRun.password}`,
    `  API token        ${firstRun.token}  (Read and write, 90 days)`,
    '',
    '  List discussions:',
    `  curl -H 'Accept: ${V1_MEDIA_TYPE}' -H 'Authorization: Bearer ${firstRun.token}' ${urls.discussions(permalink)}`,
    '',
    '',
  ].join('\n')
}

export const serveCommand: Command = {
  words: ['serve'],
  args: [],
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    db: { type: 'string' },
    'base-url': { type: 'string' },
    'site-url': { type: 'string' },
  },
  usage: 'serve [--port N] [--host ADDR] [--db FILE] [--base-url URL] [--site-url URL]',
  summary: 'Run the API and the supporter pages. A first start on an empty database creates the demo site.',
  async run(_args, values, io) {
    const config = loadConfig({ env: io.env, flags: values as Record<string, string> })
    const app = buildApp({ config, clock: io.clock, logger: true })
    await app.ready()
    const firstRun = await bootstrapFirstRun(app)
    await app.listen({ port: config.port, host: config.host })
    if (firstRun) io.stdout(firstRunBanner(config, firstRun))
    closeWithGrace({ delay: 10_000 }, async ({ err }) => {
      if (err) app.log.error({ err }, 'shutting down after an error')
      await app.close()
    })
    return undefined
  },
}
