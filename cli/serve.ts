import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from '../app.ts'
import { loadConfig, type Config } from '../config.ts'
import { V1_MEDIA_TYPE } from '../lib/accept.ts'
import { createUrls } from '../lib/urls.ts'
import type { FirstRun } from '../db/stores/bootstrap.ts'
import type { Command, Io } from './command.ts'

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

/** Builds the app on the configured file, bootstraps a first run, listens, and prints the banner. */
export async function startService(config: Config, io: Pick<Io, 'stdout' | 'clock'>, logStream: { write(line: string): void }) {
  const app = buildApp({ config, clock: io.clock, logStream })
  await app.ready()
  const firstRun = await app.database.bootstrapFirstRun(app.clock, app.secretBox)
  await app.listen({ port: config.port, host: config.host })
  const { requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs, maxConnections, maxConnectionsPerAddress } = config.connections
  app.log.info(
    { requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs, maxConnections, maxConnectionsPerAddress, logLevel: config.logLevel },
    'timeouts and connection caps',
  )
  if (firstRun) io.stdout(firstRunBanner(config, firstRun))
  return app
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
    'request-timeout': { type: 'string' },
    'headers-timeout': { type: 'string' },
    'keep-alive-timeout': { type: 'string' },
    'max-connections': { type: 'string' },
    'max-connections-per-address': { type: 'string' },
    'log-level': { type: 'string' },
  },
  usage:
    'serve [--port N] [--host ADDR] [--db FILE] [--base-url URL] [--site-url URL] [--request-timeout S] [--headers-timeout S] ' +
    '[--keep-alive-timeout S] [--max-connections N] [--max-connections-per-address N] [--log-level LEVEL]',
  summary: 'Run the API and the supporter pages. A first start on an empty database creates the demo site.',
  /* c8 ignore start: this runs, and takes signals, only in a real process; test/cli/serve.test.ts
     starts one and stops it with SIGTERM, but its coverage is not collected (test/fixtures/child.ts) */
  async run(_args, values, io) {
    const config = loadConfig({ env: io.env, flags: values as Record<string, string> })
    // The log is written asynchronously: a line costs the request a copy into a buffer, and the
    // writes to standard output batch themselves under load. Flushed when the service stops.
    const log = pino.destination({ dest: 1, sync: false })
    const app = await startService(config, io, log)
    closeWithGrace({ delay: 10_000 }, async ({ err }) => {
      if (err) app.log.error({ err }, 'shutting down after an error')
      await app.close()
      log.flushSync()
    })
    return undefined
  },
  /* c8 ignore stop */
}
