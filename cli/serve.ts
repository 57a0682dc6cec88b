import type { AddressInfo } from 'node:net'
import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from '../app.ts'
import { CONFIG_VARIABLES, loadConfig, SETTINGS, type Config } from '../config.ts'
import { V1_MEDIA_TYPE } from '../lib/accept.ts'
import { LineBatch } from '../lib/line-batch.ts'
import { settleMemory, SETTLE_AFTER_MS } from '../lib/memory.ts'
import { createUrls } from '../lib/urls.ts'
import { isPostgresAddress, redactPostgresAddress } from '../lib/database-address.ts'
import packageJson from '../package.json' with { type: 'json' }
import { isNewSqliteFile } from './admin.ts'
import type { FirstRun } from '../db/stores/bootstrap.ts'
import type { Command, Io, Options } from './command.ts'

/** The log's writes: at least this many bytes at once, and at least this often. */
export const LOG_BATCH_BYTES = 16 * 1024
export const LOG_FLUSH_MS = 1000

/** What each flag's value is, in the help; the rest are seconds. */
const VALUES: Record<string, string> = { port: 'N', host: 'ADDRESS', db: 'ADDRESS', 'base-url': 'URL', 'site-url': 'URL', 'max-connections': 'N', 'max-connections-per-address': 'N', 'log-level': 'LEVEL' }
const plain = (markdown: string) => markdown.replaceAll('`', '')

/** serve's flags, each with its setting's meaning, default and variable (config.ts's SETTINGS). */
export const SERVE_OPTIONS: Options = Object.fromEntries(
  CONFIG_VARIABLES.map(({ variable, flag }) => {
    const setting = SETTINGS.find((s) => s.variable === variable)!
    return [flag, { type: 'string', value: VALUES[flag] ?? 'SECONDS', about: plain(setting.about), fallback: plain(setting.fallback), variable }]
  }),
)

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

/** The address the server listens at, as a URL (an IPv6 address in brackets). */
export function listeningAt({ address, family, port }: Pick<AddressInfo, 'address' | 'family' | 'port'>): string {
  return `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`
}

/**
 * The one human line of every start, on standard error (the JSON log has standard output): where
 * it listens, where the API and the pages of its first site are, and which database it serves.
 */
export function servingLine(config: Config, listening: string, permalinks: string[], created: boolean): string {
  const urls = createUrls(config.baseUrl, config.siteUrl)
  const site = permalinks[0]
  const api = site === undefined ? `${config.baseUrl}/<site>` : urls.site(site)
  const pages = site === undefined ? config.siteUrl.replace('{site}', '<site>') : urls.siteWeb(site)
  const more = permalinks.length > 1 ? ` (and ${permalinks.length - 1} more site${permalinks.length > 2 ? 's' : ''})` : ''
  const database = isPostgresAddress(config.databaseAddress) ? redactPostgresAddress(config.databaseAddress) : config.databaseAddress
  return (
    `service-desk ${packageJson.version} listening on ${listening}: the API at ${api}, the supporter pages at ` +
    `${pages}/login${more}; database ${database}${created ? ' (new)' : ''}\n`
  )
}

/** What a start without any site says (SERVICE_DEMO=off on a new database). */
export const NO_SITE_YET = 'No site yet: make one with `service-desk site add <site>`, then its people (docs/operations.md, "Set up your team").\n'

/**
 * Builds the app on the configured file, bootstraps a first run, listens, and says so (the banner on
 * a first run); a second after it listens, gives back the memory its start grew (`settle`, lib/memory.ts).
 */
export async function startService(config: Config, io: Pick<Io, 'stdout' | 'stderr' | 'clock'>, logStream: { write(line: string): void }, settle = settleMemory) {
  const created = isNewSqliteFile(config.databaseAddress, { creates: true })
  const app = buildApp({ config, clock: io.clock, logStream })
  let settling: NodeJS.Timeout | undefined
  app.addHook('onClose', async () => clearTimeout(settling))
  await app.ready()
  // Production says SERVICE_DEMO=off: no demo site, and no password in the log (docs/operations.md).
  const firstRun = config.demo ? await app.database.bootstrapFirstRun(app.clock, app.secretBox) : null
  await app.listen({ port: config.port, host: config.host })
  const { requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs, maxConnections, maxConnectionsPerAddress } = config.connections
  app.log.info(
    { requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs, maxConnections, maxConnectionsPerAddress, logLevel: config.logLevel },
    'timeouts and connection caps',
  )
  if (firstRun) io.stdout(firstRunBanner(config, firstRun))
  const permalinks = (await app.sites.list()).map((site) => site.permalink)
  io.stderr(servingLine(config, listeningAt(app.server.address() as AddressInfo), permalinks, created))
  if (permalinks.length === 0) io.stderr(NO_SITE_YET)
  settling = setTimeout(settle, SETTLE_AFTER_MS).unref()
  return app
}

export const serveCommand: Command = {
  words: ['serve'],
  args: [],
  options: SERVE_OPTIONS,
  usage: 'serve [--port N] [--host ADDRESS] [--db ADDRESS] [more options below]',
  summary: 'Run the API and the supporter pages. A first start on an empty database creates the demo site (unless SERVICE_DEMO=off).',
  /* c8 ignore start: this runs, and takes signals, only in a real process; test/cli/serve.test.ts
     starts one and stops it with SIGTERM, but its coverage is not collected (test/fixtures/child.ts) */
  async run(_args, values, io) {
    const config = loadConfig({ env: io.env, flags: values as Record<string, string> })
    // The log is written asynchronously, in writes of about 16 KB (some eighty requests' lines: a
    // write costs the service 20 us of copying and handing over, a write per line cost a busy
    // service a tenth of its throughput), and at least every second, so a line is out within a
    // second of its request. Flushed when the service stops.
    const out = pino.destination({ dest: 1, sync: false })
    const log = new LineBatch(out, LOG_BATCH_BYTES)
    const app = await startService(config, io, log)
    log.flush()
    const flushing = setInterval(() => log.flush(), LOG_FLUSH_MS).unref()
    closeWithGrace({ delay: 10_000 }, async ({ err }) => {
      if (err) app.log.error({ err }, 'shutting down after an error')
      clearInterval(flushing)
      await app.close()
      log.flush()
      out.flushSync()
    })
    return undefined
  },
  /* c8 ignore stop */
}
