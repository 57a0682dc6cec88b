// Configuration comes from environment variables, each of which a command-line flag overrides.
// A bad value stops start-up with one clear line (ConfigError's message).

import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { ConfigError } from './lib/config-error.ts'
import { parseAllowedRanges, type AllowedRange } from './lib/webhook-address.ts'
import { DEFAULT_FILE_LIMITS, DEFAULT_MAIL_ATTACH_BYTES, MESSAGE_LIMITS, MiB, type FileLimits } from './lib/files.ts'
import { connectionsAllowed, defaultMaxConnections, DEFAULT_TIMEOUTS, processOpenFiles, type ConnectionSettings } from './lib/connections.ts'
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, type LogLevel } from './plugins/http/request-log.ts'
import { MIN_SECRET_LENGTH } from './lib/server-key.ts'
import { RSPAMD_TIMEOUT_MS } from './lib/rspamd.ts'
import { databaseAddressProblem, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS, isPostgresAddress, type PostgresOptions } from './lib/database-address.ts'
import { DEFAULT_LIMITS, type AuthLimitSettings } from './plugins/auth/limits.ts'
import { DEFAULT_RATE_LIMITS, MAX_RATE_LIMIT, type RateLimitSettings } from './plugins/rate-limits.ts'
import type { MailSettings } from './plugins/mail.ts'
import type { ReceiverSettings } from './plugins/mail/receiver.ts'
import { hstsByDefault } from './plugins/transport-security.ts'

export interface Config {
  port: number
  host: string
  /** SERVICE_DB: a SQLite file, or a postgres:// address (db/engine.ts). */
  databaseAddress: string
  /** SERVICE_DB_POOL_SIZE, SERVICE_DB_STATEMENT_TIMEOUT, SERVICE_DB_CONNECT_TIMEOUT: PostgreSQL only. */
  postgres?: PostgresOptions
  /** Origin of the API, without a trailing slash. */
  baseUrl: string
  /** Address of a site's supporter web pages, with `{site}` where the permalink goes. */
  siteUrl: string
  /** SERVICE_SECRET, the server key; absent, a key file in the data folder is used (lib/server-key.ts). */
  secret?: string
  /** SERVICE_TRUST_PROXY: which proxies' X-Forwarded-For is believed (Fastify's trustProxy); false by default. */
  trustProxy: false | string
  /** How failed authentication is slowed down (plugins/auth/limits.ts). */
  limits: AuthLimitSettings
  /** SERVICE_RATE_LIMIT_*: fair use, requests per credential or address per window (plugins/rate-limits.ts). */
  rateLimits: RateLimitSettings
  /** SERVICE_DEMO: whether a first start on a database without a site makes the demo site (on by default). */
  demo: boolean
  /** SERVICE_OUTBOX_SEND: whether this process sends the outbox (mail and webhooks); another process on the database does when it does not. */
  outboxSend: boolean
  /** SERVICE_HSTS: Strict-Transport-Security on every answer; on by default when an address is https. */
  hsts: boolean
  /** SERVICE_OAUTH_REGISTRATION: RFC 7591 dynamic registration of OAuth applications (plugins/oauth); on by default. */
  oauthRegistration: boolean
  /** SERVICE_MCP_ALLOWED_ORIGINS: browser origins besides the service's own that may call the MCP endpoint. */
  mcpAllowedOrigins: string[]
  /** SERVICE_LEAK_REPORT_KEY: the HMAC key of signed leak reports (POST /token_leaks); without it that endpoint is 404. */
  leakReportKey?: string
  /** SERVICE_SECURITY_LOG_DAYS: how long the security log keeps an event (400 days by default). */
  securityLogDays: number
  /** SERVICE_SUDO_MINUTES: how long a proof that it is them lasts for the sensitive actions of the pages (15 by default). */
  sudoMinutes: number
  /** SERVICE_FILE_MAX_MB and SERVICE_SITE_FILES_MB: the largest attachment, and the space of a site's files (db/stores/files.ts). */
  files: FileLimits
  /** SERVICE_MAIL_ATTACHMENTS_MB: the most a reply's files add up to and still go attached to its mail; past it the mail links to them (plugins/mail/sender.ts). */
  mailAttachBytes: number
  /** SERVICE_MAIL_RECEIVER: where the built-in receiver of mail listens (plugins/mail/receiver.ts); none without it. */
  mailReceiver?: ReceiverSettings
  /** SERVICE_MAIL_FETCH_SECONDS: how often IMAP mailboxes are looked at when their servers say nothing (plugins/mail/fetcher.ts). */
  mailFetchSeconds: number
  /** SERVICE_SLA_ALERT_SECONDS: how often SLA warnings and breaches are looked for (plugins/sla-alerts.ts). */
  slaAlertSeconds: number
  /** SERVICE_RETENTION_SECONDS: how often the sites' retention runs (plugins/retention.ts). */
  retentionSeconds: number
  /** SERVICE_MAIL_SPAM_HEADERS: whether a mail provider's spam verdict in a message's headers makes it spam (lib/mail.ts, spamReason). */
  mailSpamHeaders: boolean
  /** SERVICE_RSPAMD_URL and SERVICE_RSPAMD_TIMEOUT: the rspamd whose verdict a new discussion's mail gets when no rule or header decided (lib/rspamd.ts); none without it. */
  mailRspamd?: { url: string; timeoutMs: number }
  /** Where webhooks may be posted and how long a try may take (plugins/webhooks/delivery.ts). */
  webhooks: WebhookSettings
  /** SERVICE_SMTP_URL and SERVICE_MAIL_FROM: where token expiry notices and administrators' notices are sent from; no mail without them. */
  mail?: MailSettings
  /** The timeouts and connection caps of the HTTP server (lib/connections.ts). */
  connections: ConnectionSettings
  /** SERVICE_LOG_LEVEL: at `warn`, the line per answered request is not written; refusals and errors are. */
  logLevel: LogLevel
}

export interface ConfigSource {
  env: Record<string, string | undefined>
  flags: Partial<Record<Key, string>>
  /** The process's open-file limit, which bounds the connection cap; read from the system when absent. */
  openFiles?: number
}

export { ConfigError }

/** The settings with a flag of `serve`, which wins over the variable. */
export const CONFIG_VARIABLES = [
  { variable: 'PORT', flag: 'port' },
  { variable: 'HOST', flag: 'host' },
  { variable: 'SERVICE_DB', flag: 'db' },
  { variable: 'SERVICE_BASE_URL', flag: 'base-url' },
  { variable: 'SERVICE_SITE_URL', flag: 'site-url' },
  { variable: 'SERVICE_REQUEST_TIMEOUT', flag: 'request-timeout' },
  { variable: 'SERVICE_HEADERS_TIMEOUT', flag: 'headers-timeout' },
  { variable: 'SERVICE_KEEP_ALIVE_TIMEOUT', flag: 'keep-alive-timeout' },
  { variable: 'SERVICE_MAX_CONNECTIONS', flag: 'max-connections' },
  { variable: 'SERVICE_MAX_CONNECTIONS_PER_ADDRESS', flag: 'max-connections-per-address' },
  { variable: 'SERVICE_LOG_LEVEL', flag: 'log-level' },
] as const

/**
 * Every setting, its default and what it is for: the source of docs/reference/settings.md
 * (tools/docs/references.ts), which test/house/references.test.ts holds to this table and this
 * table to the settings the code reads. Markdown, one line each.
 */
export const SETTINGS: ReadonlyArray<{ variable: string; fallback: string; about: string }> = [
  { variable: 'PORT', fallback: '`3000`', about: 'TCP port to listen on' },
  { variable: 'HOST', fallback: '`127.0.0.1`', about: 'address to listen on (`0.0.0.0` for every interface)' },
  { variable: 'SERVICE_DB', fallback: '`./data/service.db`', about: 'the SQLite file (a new one is created mode 0600, in a new folder of mode 0700), or a PostgreSQL address `postgres://user:password@host:5432/db`, optionally `?schema=name`' },
  { variable: 'SERVICE_DB_POOL_SIZE', fallback: '`10`', about: 'PostgreSQL only: connections each process keeps at most' },
  { variable: 'SERVICE_DB_STATEMENT_TIMEOUT', fallback: '`5`', about: 'PostgreSQL only: seconds a statement may run; past it the request gets `503`' },
  { variable: 'SERVICE_DB_CONNECT_TIMEOUT', fallback: '`5`', about: 'PostgreSQL only: seconds a request waits for a free connection (or a new one); past it `503`' },
  { variable: 'SERVICE_BASE_URL', fallback: '`http://localhost:<PORT>`', about: 'public origin of the API, no path' },
  { variable: 'SERVICE_SITE_URL', fallback: '`SERVICE_BASE_URL` followed by `/{site}` (`http://localhost:<PORT>/{site}`)', about: 'public address of a site\'s supporter pages; `{site}` once, in the path' },
  { variable: 'SERVICE_SECRET', fallback: 'key file `service.key` beside the database', about: 'the server key, at least 32 characters; required with PostgreSQL, the same in every process' },
  { variable: 'SERVICE_TRUST_PROXY', fallback: 'none', about: 'the reverse proxies whose `X-Forwarded-For` is believed: addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`, comma-separated' },
  { variable: 'SERVICE_AUTH_FAILURES_PER_ADDRESS', fallback: '`20`', about: 'failed authentications of any kind from one client address per window, then `429`' },
  { variable: 'SERVICE_AUTH_FAILURES_PER_ACCOUNT', fallback: '`5`', about: 'failed password checks of one account per window, then `429`' },
  { variable: 'SERVICE_AUTH_FAILURE_WINDOW', fallback: '`300`', about: 'that window, in seconds' },
  { variable: 'SERVICE_RATE_LIMIT_READS', fallback: '`10000`', about: 'fair use: reads (GET, HEAD, MCP messages) per credential (a token, an OAuth grant, an account) per window, then `429` with `Retry-After`' },
  { variable: 'SERVICE_RATE_LIMIT_WRITES', fallback: '`1000`', about: 'writes (POST, PUT, PATCH, DELETE) per credential per window' },
  { variable: 'SERVICE_RATE_LIMIT_ANONYMOUS', fallback: '`1000`', about: 'API requests that no credential was accepted for (refusals included) per client address (an IPv6 /64) per window' },
  { variable: 'SERVICE_RATE_LIMIT_WINDOW', fallback: '`3600`', about: 'that window, in seconds (windows start on the clock: on the hour by default)' },
  { variable: 'SERVICE_RATE_LIMIT_SITES', fallback: 'none', about: 'sites with reads and writes of their own, space-separated: `demo:reads=20000,writes=2000 other:reads=500`' },
  { variable: 'SERVICE_DEMO', fallback: '`on`', about: '`off`: a first start on a database without any site makes no demo site (production: make your sites with `service-desk site add`)' },
  { variable: 'SERVICE_HSTS', fallback: '`on` when `SERVICE_BASE_URL` or `SERVICE_SITE_URL` is https, else `off`', about: '`Strict-Transport-Security: max-age=31536000` on every answer; `off` where the TLS proxy sets it' },
  { variable: 'SERVICE_OAUTH_REGISTRATION', fallback: '`on`', about: 'RFC 7591 dynamic registration of OAuth applications at `/oauth/register`; `off` leaves registration to `service-desk oauth-client add`' },
  { variable: 'SERVICE_MCP_ALLOWED_ORIGINS', fallback: 'none', about: 'comma-separated origins (`https://assistant.example.com`) whose browser pages may call `/<site>/mcp`, besides the service\'s own base and site URLs; any other `Origin` gets 403' },
  { variable: 'SERVICE_LEAK_REPORT_KEY', fallback: 'none: `/token_leaks` answers 404', about: 'the HMAC key of signed leak reports, at least 32 characters' },
  { variable: 'SERVICE_SECURITY_LOG_DAYS', fallback: '`400`', about: 'how many days the security log keeps an event' },
  { variable: 'SERVICE_SUDO_MINUTES', fallback: '`15`', about: 'how long after signing in or confirming it is them a supporter may create a token or change what administrators change, before the pages ask again for the password, or for a second factor when the person has one' },
  { variable: 'SERVICE_FILE_MAX_MB', fallback: '`10`', about: 'the largest file an attachment may be, in MiB (at most 25, what one message may carry in all)' },
  { variable: 'SERVICE_SITE_FILES_MB', fallback: '`1024`', about: "the space a site's files may take in the database, in MiB; a file it already has takes none" },
  { variable: 'SERVICE_MAIL_RECEIVER', fallback: 'none: no mail is taken in', about: "`PORT` or `HOST:PORT` (`0.0.0.0:25` for an MX): the built-in receiver of the sites' mail, which takes mail for their mailbox addresses only (`service-desk mailbox add`)" },
  { variable: 'SERVICE_MAIL_RECEIVER_CERT', fallback: 'none: no STARTTLS', about: 'a PEM file of the certificate (with its chain) the receiver offers STARTTLS with, for the name the MX record points at' },
  { variable: 'SERVICE_MAIL_RECEIVER_KEY', fallback: 'none', about: "the PEM file of that certificate's private key; both or neither" },
  { variable: 'SERVICE_SLA_ALERT_SECONDS', fallback: '`30`', about: 'how often each process looks for SLA warnings and breaches that are due (each is told once, by one process); a warning is told at most this late' },
  { variable: 'SERVICE_RETENTION_SECONDS', fallback: '`3600`', about: "how often each process deletes the discussions past their site's retention (Administration -> Customers' data; each is deleted once, by one process)" },
  { variable: 'SERVICE_MAIL_FETCH_SECONDS', fallback: '`60`', about: "how often the sites' IMAP mailboxes are looked at for new mail when their servers do not announce it (IDLE), and how soon another process takes over a mailbox whose process died (three times this)" },
  { variable: 'SERVICE_MAIL_SPAM_HEADERS', fallback: '`on`', about: "`off`: a mail provider's spam verdict in a message's headers (`X-Spam-Flag: YES`, `X-Spam-Status: Yes`, Microsoft 365's `SFV:SPM`) is not read; only the sites' blocked senders make mail spam" },
  { variable: 'SERVICE_RSPAMD_URL', fallback: 'none: rspamd is not asked', about: "`http://127.0.0.1:11333`, rspamd's normal worker: a new discussion's mail that no sender rule or provider's header decided is sent to its `/checkv2`, and is spam when rspamd's action is `reject`, `add header` or `rewrite subject`; rspamd down or slower than `SERVICE_RSPAMD_TIMEOUT` lets the mail in, with a warning in the log" },
  { variable: 'SERVICE_RSPAMD_TIMEOUT', fallback: '`10`', about: 'seconds rspamd has to judge a message before it is taken without its verdict (the door that took it waits meanwhile)' },
  { variable: 'SERVICE_OUTBOX_SEND', fallback: '`on`', about: "`off`: this process sends no mail and posts no webhooks (what it writes is queued as ever): for several processes on one PostgreSQL database where the others send; with none sending, nothing leaves" },
  { variable: 'SERVICE_WEBHOOK_ALLOW', fallback: 'none: only public addresses', about: "private ranges webhooks may be posted to though they are private (internal integrations), CIDR ranges or addresses, comma-separated: `10.20.0.0/16,fd12::/64`; loopback, private, link-local and the like are refused otherwise" },
  { variable: 'SERVICE_WEBHOOK_TIMEOUT', fallback: '`10`', about: 'seconds a webhook endpoint has to answer a delivery; past it the try failed and is made again later' },
  { variable: 'SERVICE_SMTP_URL', fallback: 'none: no mail', about: '`smtp://user:password@host:587` (STARTTLS when offered) or `smtps://...` (TLS from the start): where expiry notices and the notices of revocations by administrators are sent; never logged' },
  { variable: 'SERVICE_MAIL_FROM', fallback: '`Service Desk <service-desk@` the host of `SERVICE_BASE_URL` `>`', about: 'the From of those mails' },
  { variable: 'SERVICE_MAIL_ATTACHMENTS_MB', fallback: '`10`', about: "the most, in MiB, a reply's files may add up to and still go attached to its mail (at most 25; base64 makes a mail a third larger than its files); past it the mail names each file with its link on the support site" },
  { variable: 'SERVICE_REQUEST_TIMEOUT', fallback: '`30`', about: 'seconds a client has to send a whole request, headers and body; then `408` and the connection is closed' },
  { variable: 'SERVICE_HEADERS_TIMEOUT', fallback: '`15`', about: 'seconds to send the request line and headers, counted from the connection or from the first byte of the next request; not longer than the request timeout' },
  { variable: 'SERVICE_KEEP_ALIVE_TIMEOUT', fallback: '`5`', about: 'seconds an idle keep-alive connection is kept after an answer' },
  { variable: 'SERVICE_MAX_CONNECTIONS', fallback: 'the open-file limit less a tenth of it (at least 64) for the database and the logs, at most `10000`', about: 'connections open at once; past it a new connection is closed as soon as it is accepted, requests in flight go on' },
  { variable: 'SERVICE_MAX_CONNECTIONS_PER_ADDRESS', fallback: '`0` (no cap per address)', about: 'connections open at once from one client address (the socket\'s; leave it off behind a proxy)' },
  { variable: 'SERVICE_LOG_LEVEL', fallback: '`info`', about: '`trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent`; at `warn` the line per answered request is not written, refusals and errors are' },
]

type Key = (typeof CONFIG_VARIABLES)[number]['flag']

// The server key is read from the environment only: a flag would show it in the process list.
export const SECRET_VARIABLE = 'SERVICE_SECRET'
export { MIN_SECRET_LENGTH }

function pick(source: ConfigSource, key: Key): { value: string | undefined; name: string } {
  const entry = CONFIG_VARIABLES.find((v) => v.flag === key)!
  const flag = source.flags[key]
  if (flag !== undefined) return { value: flag, name: `--${key}` }
  return { value: source.env[entry.variable], name: entry.variable }
}

function parsePort(value: string, name: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) {
    throw new ConfigError(`${name} must be a port number from 0 to 65535, not "${value}"`)
  }
  return Number(value)
}

function parseHttpUrl(value: string, name: string, example: string): URL {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`${name} must be an http or https address such as ${example}, not "${value}"`)
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`${name} must be an http or https address such as ${example}, not "${value}"`)
  }
  return url
}

function parseBaseUrl(value: string, name: string): string {
  const url = parseHttpUrl(value, name, 'https://api.example.com')
  if (url.pathname !== '/') throw new ConfigError(`${name} must be an origin without a path, such as https://api.example.com, not "${value}"`)
  return url.origin
}

function parseSiteUrl(value: string, name: string): string {
  const example = 'https://help.example.com/{site}'
  const count = value.split('{site}').length - 1
  if (count !== 1) throw new ConfigError(`${name} must contain {site} exactly once, such as ${example}, not "${value}"`)
  const url = parseHttpUrl(value.replace('{site}', 'site'), name, example)
  if (!decodeURI(url.pathname).includes('/site')) {
    throw new ConfigError(`${name} must have {site} in its path, such as ${example}, not "${value}"`)
  }
  return value.replace(/\/+$/, '')
}

/**
 * SERVICE_MAIL_RECEIVER: `PORT` (on 127.0.0.1) or `HOST:PORT`; unset, no receiver. With
 * SERVICE_MAIL_RECEIVER_CERT and SERVICE_MAIL_RECEIVER_KEY (PEM files, both or neither), it offers
 * STARTTLS.
 */
function parseReceiver(source: ConfigSource): { mailReceiver?: ReceiverSettings } {
  const value = source.env.SERVICE_MAIL_RECEIVER?.trim()
  if (!value) return {}
  const found = /^(?:(.+):)?(\d{1,5})$/.exec(value)
  const port = Number(found?.[2])
  const host = (found?.[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1')
  if (!found || port > 65_535 || (host !== 'localhost' && !isIP(host))) {
    throw new ConfigError(`SERVICE_MAIL_RECEIVER must be a port or an address and a port (0.0.0.0:25), not "${value}"`)
  }
  const [cert, key] = ['SERVICE_MAIL_RECEIVER_CERT', 'SERVICE_MAIL_RECEIVER_KEY'].map((name) => {
    const path = source.env[name]?.trim()
    if (!path) return undefined
    try {
      return readFileSync(path)
    } catch (error) {
      throw new ConfigError(`${name} must be a readable PEM file: ${(error as NodeJS.ErrnoException).code} for "${path}"`)
    }
  })
  if ((cert === undefined) !== (key === undefined)) throw new ConfigError('SERVICE_MAIL_RECEIVER_CERT and SERVICE_MAIL_RECEIVER_KEY go together: set both, or neither')
  return { mailReceiver: { host, port, ...(cert && key && { tls: { cert, key } }) } }
}

function parseCount(source: ConfigSource, variable: string, fallback: number, max: number): number {
  const value = source.env[variable]
  if (value === undefined) return fallback
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new ConfigError(`${variable} must be a whole number from 1 to ${max}, not "${value}"`)
  }
  return Number(value)
}

const PROXY_KEYWORDS = new Set(['loopback', 'linklocal', 'uniquelocal'])

function isAddressOrRange(part: string): boolean {
  if (PROXY_KEYWORDS.has(part)) return true
  const [address, bits, ...rest] = part.split('/')
  if (rest.length > 0 || isIP(address!) === 0) return false
  if (bits === undefined) return true
  const max = isIP(address!) === 4 ? 32 : 128
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max
}

/**
 * SERVICE_TRUST_PROXY: unset, no proxy is trusted and the client address is the socket's. Set, a
 * comma-separated list of the proxies' addresses, CIDR ranges and proxy-addr's names (loopback,
 * linklocal, uniquelocal): X-Forwarded-For is believed only from them. "true" (any client's
 * X-Forwarded-For) would let anyone pick their address and escape the per-address limits, and a
 * bare hop count cannot check who sent it, so both are refused.
 */
function parseTrustProxy(value: string | undefined): Config['trustProxy'] {
  if (value === undefined || value.trim() === '') return false
  const parts = value.split(',').map((part) => part.trim())
  if (parts.every(isAddressOrRange)) return parts.join(',')
  throw new ConfigError(
    `SERVICE_TRUST_PROXY must be a comma-separated list of proxy addresses or ranges, such as 127.0.0.1, 10.0.0.0/8 or loopback, not "${value}"`,
  )
}

/** SERVICE_MCP_ALLOWED_ORIGINS: a comma-separated list of http(s) origins; unset or blank, none. */
function parseOrigins(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return []
  return value.split(',').map((part) => {
    const url = parseHttpUrl(part.trim(), 'SERVICE_MCP_ALLOWED_ORIGINS', 'https://assistant.example.com')
    if (url.pathname !== '/') throw new ConfigError(`SERVICE_MCP_ALLOWED_ORIGINS must list origins without a path, such as https://assistant.example.com, not "${part.trim()}"`)
    return url.origin
  })
}

export interface WebhookSettings {
  allowed: AllowedRange[]
  timeoutMs: number
}

function parseWebhooks(source: ConfigSource): WebhookSettings {
  const allowed = parseAllowedRanges(source.env.SERVICE_WEBHOOK_ALLOW)
  if (typeof allowed === 'string') throw new ConfigError(`SERVICE_WEBHOOK_ALLOW: ${allowed}`)
  return { allowed, timeoutMs: parseCount(source, 'SERVICE_WEBHOOK_TIMEOUT', 10, 300) * 1000 }
}

export const DEFAULT_SECURITY_LOG_DAYS = 400
export const DEFAULT_SUDO_MINUTES = 15

/**
 * SERVICE_SMTP_URL (smtp://user:password@host:587, smtps://... for TLS from the start) and
 * SERVICE_MAIL_FROM (by default service-desk@ the API's host name). A bad address is refused
 * without repeating it: it may hold a password.
 */
function parseMail(source: ConfigSource, baseUrl: string): { mail?: MailSettings } {
  const smtpUrl = source.env.SERVICE_SMTP_URL?.trim()
  if (!smtpUrl) return {}
  if (!URL.canParse(smtpUrl) || !['smtp:', 'smtps:'].includes(new URL(smtpUrl).protocol) || new URL(smtpUrl).hostname === '') {
    throw new ConfigError('SERVICE_SMTP_URL must be an smtp:// or smtps:// address with a host, such as smtp://user:password@mail.example.com:587')
  }
  const from = source.env.SERVICE_MAIL_FROM?.trim() || `Service Desk <service-desk@${new URL(baseUrl).hostname}>`
  if (!from.includes('@') || /[\r\n]/.test(from)) {
    throw new ConfigError(`SERVICE_MAIL_FROM must be one mail address, such as "Service Desk <help@example.com>", not "${from.replace(/[\r\n]/g, ' ')}"`)
  }
  return { mail: { smtpUrl, from } }
}

/** SERVICE_RSPAMD_URL: rspamd's normal worker, an http address without credentials; unset, none. SERVICE_RSPAMD_TIMEOUT: seconds, 1 to 60. */
function parseRspamd(source: ConfigSource): { mailRspamd?: Config['mailRspamd'] } {
  const value = source.env.SERVICE_RSPAMD_URL?.trim()
  if (!value) return {}
  // Refused without repeating the address: what it carries after the scheme may be a password.
  if (URL.canParse(value) && (new URL(value).username || new URL(value).password)) throw new ConfigError("SERVICE_RSPAMD_URL must not carry a user or a password: rspamd's normal worker asks for none")
  return { mailRspamd: { url: parseHttpUrl(value, 'SERVICE_RSPAMD_URL', 'http://127.0.0.1:11333').href, timeoutMs: parseCount(source, 'SERVICE_RSPAMD_TIMEOUT', RSPAMD_TIMEOUT_MS / 1000, 60) * 1000 } }
}

/** SERVICE_LEAK_REPORT_KEY: a shared secret of at least 32 characters, or nothing. */
function parseLeakReportKey(source: ConfigSource): { leakReportKey?: string } {
  const key = source.env.SERVICE_LEAK_REPORT_KEY?.trim()
  if (!key) return {}
  if (key.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`SERVICE_LEAK_REPORT_KEY must be at least ${MIN_SECRET_LENGTH} characters, such as the output of: openssl rand -hex 32`)
  }
  return { leakReportKey: key }
}

/** A switch of the environment, `on` or `off`; unset or blank, the fallback. */
function parseSwitch(source: ConfigSource, name: string, fallback: boolean): boolean {
  const value = source.env[name]
  if (value === undefined || value.trim() === '') return fallback
  const switched = value.trim().toLowerCase()
  if (switched === 'on') return true
  if (switched === 'off') return false
  throw new ConfigError(`${name} must be on or off, not "${value}"`)
}

// Timeouts are set in whole seconds: up to an hour, at least one (zero would turn a timeout off).
const MAX_TIMEOUT_SECONDS = 3600

/** A timeout in whole seconds, as milliseconds; unset or blank, the default. */
function parseTimeout(source: ConfigSource, key: Key, fallbackMs: number): { ms: number; name: string } {
  const { value, name } = pick(source, key)
  if (value === undefined || value.trim() === '') return { ms: fallbackMs, name }
  const seconds = value.trim()
  if (!/^\d{1,4}$/.test(seconds) || Number(seconds) < 1 || Number(seconds) > MAX_TIMEOUT_SECONDS) {
    throw new ConfigError(`${name} must be a whole number of seconds from 1 to ${MAX_TIMEOUT_SECONDS}, not "${value}"`)
  }
  return { ms: Number(seconds) * 1000, name }
}

function parseWhole(source: ConfigSource, key: Key, min: number, max: number, range: string): number | undefined {
  const { value, name } = pick(source, key)
  if (value === undefined || value.trim() === '') return undefined
  const trimmed = value.trim()
  if (!/^\d{1,9}$/.test(trimmed) || Number(trimmed) < min || Number(trimmed) > max) {
    throw new ConfigError(`${name} must be a whole number from ${range}, not "${value}"`)
  }
  return Number(trimmed)
}

/**
 * The timeouts and the caps. The headers are part of the request, so their timeout cannot be the
 * longer one; the cap must leave the database and the logs their file descriptors.
 */
function parseConnections(source: ConfigSource): ConnectionSettings {
  const request = parseTimeout(source, 'request-timeout', DEFAULT_TIMEOUTS.requestTimeoutMs)
  const headers = parseTimeout(source, 'headers-timeout', DEFAULT_TIMEOUTS.headersTimeoutMs)
  const keepAlive = parseTimeout(source, 'keep-alive-timeout', DEFAULT_TIMEOUTS.keepAliveTimeoutMs)
  if (headers.ms > request.ms) {
    throw new ConfigError(
      `${headers.name} (${headers.ms / 1000} s) must not be longer than ${request.name} (${request.ms / 1000} s): the request timeout covers the headers too`,
    )
  }
  const openFiles = source.openFiles ?? processOpenFiles()
  const allowed = connectionsAllowed(openFiles)
  const cap = pick(source, 'max-connections')
  const maxConnections = parseWhole(source, 'max-connections', 1, 999_999_999, `1 to ${allowed}`) ?? defaultMaxConnections(openFiles)
  if (maxConnections > allowed) {
    throw new ConfigError(
      `${cap.name} is ${maxConnections}, but this process may open ${openFiles} files, which leaves room for ${allowed} connections ` +
        'beside the database and the logs: raise the limit (ulimit -n, or LimitNOFILE= in a systemd unit) or lower the setting',
    )
  }
  const perAddress = parseWhole(source, 'max-connections-per-address', 0, maxConnections, `0 (no cap per address) to the connection cap (${maxConnections})`)
  return {
    requestTimeoutMs: request.ms,
    headersTimeoutMs: headers.ms,
    keepAliveTimeoutMs: keepAlive.ms,
    maxConnections,
    maxConnectionsPerAddress: perAddress ?? 0,
  }
}

/** SERVICE_LOG_LEVEL: one of pino's levels, any case; unset or blank, `info`. */
function parseLogLevel(source: ConfigSource): LogLevel {
  const { value, name } = pick(source, 'log-level')
  if (value === undefined || value.trim() === '') return DEFAULT_LOG_LEVEL
  const level = value.trim().toLowerCase()
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogLevel
  throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')}, not "${value}"`)
}

export function loadConfig(source: ConfigSource): Config {
  const port = pick(source, 'port')
  const host = pick(source, 'host')
  const db = pick(source, 'db')
  const baseUrl = pick(source, 'base-url')
  const siteUrl = pick(source, 'site-url')

  const portNumber = port.value === undefined ? 3000 : parsePort(port.value, port.name)
  if (host.value !== undefined && host.value.trim() === '') throw new ConfigError(`${host.name} must not be empty`)
  const dbProblem = db.value === undefined ? undefined : databaseAddressProblem(db.value)
  if (dbProblem !== undefined) throw new ConfigError(`${db.name} ${dbProblem}`)
  const secret = source.env[SECRET_VARIABLE]
  if (secret !== undefined && secret.trim().length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`${SECRET_VARIABLE} must be at least ${MIN_SECRET_LENGTH} characters, such as the output of: openssl rand -hex 32`)
  }
  const database = db.value ?? './data/service.db'
  // Every process on one PostgreSQL database must seal and sign with the same key, and there is no
  // data folder to keep a key file in (lib/server-key.ts).
  if (isPostgresAddress(database) && secret === undefined) {
    throw new ConfigError(`${db.name} names a PostgreSQL database: set ${SECRET_VARIABLE}, the same in every process, such as the output of: openssl rand -hex 32`)
  }
  const base = baseUrl.value === undefined ? `http://localhost:${portNumber}` : parseBaseUrl(baseUrl.value, baseUrl.name)
  // The supporter pages are served beside the API: without an address of their own they are under
  // the API's (a start with only SERVICE_BASE_URL once mailed customers links to localhost).
  const site = siteUrl.value === undefined ? `${base}/{site}` : parseSiteUrl(siteUrl.value, siteUrl.name)
  return {
    port: portNumber,
    host: host.value ?? '127.0.0.1',
    databaseAddress: database,
    ...(isPostgresAddress(database)
      ? {
          postgres: {
            poolSize: parseCount(source, 'SERVICE_DB_POOL_SIZE', DEFAULT_POOL_SIZE, 1_000),
            statementTimeoutMs: parseCount(source, 'SERVICE_DB_STATEMENT_TIMEOUT', DEFAULT_STATEMENT_TIMEOUT_MS / 1000, 3_600) * 1000,
            connectTimeoutMs: parseCount(source, 'SERVICE_DB_CONNECT_TIMEOUT', DEFAULT_CONNECT_TIMEOUT_MS / 1000, 3_600) * 1000,
          },
        }
      : {}),
    baseUrl: base,
    siteUrl: site,
    ...(secret === undefined ? {} : { secret: secret.trim() }),
    trustProxy: parseTrustProxy(source.env.SERVICE_TRUST_PROXY),
    // SERVICE_HSTS: unset, on when the API or the pages are served over https.
    hsts: parseSwitch(source, 'SERVICE_HSTS', hstsByDefault(base, site)),
    demo: parseSwitch(source, 'SERVICE_DEMO', true),
    outboxSend: parseSwitch(source, 'SERVICE_OUTBOX_SEND', true),
    oauthRegistration: parseSwitch(source, 'SERVICE_OAUTH_REGISTRATION', true),
    mcpAllowedOrigins: parseOrigins(source.env.SERVICE_MCP_ALLOWED_ORIGINS),
    ...parseLeakReportKey(source),
    securityLogDays: parseCount(source, 'SERVICE_SECURITY_LOG_DAYS', DEFAULT_SECURITY_LOG_DAYS, 3_650),
    mailFetchSeconds: parseCount(source, 'SERVICE_MAIL_FETCH_SECONDS', 60, 3_600),
    slaAlertSeconds: parseCount(source, 'SERVICE_SLA_ALERT_SECONDS', 30, 3_600),
    retentionSeconds: parseCount(source, 'SERVICE_RETENTION_SECONDS', 3_600, 86_400),
    mailSpamHeaders: parseSwitch(source, 'SERVICE_MAIL_SPAM_HEADERS', true),
    ...parseRspamd(source),
    webhooks: parseWebhooks(source),
    sudoMinutes: parseCount(source, 'SERVICE_SUDO_MINUTES', DEFAULT_SUDO_MINUTES, 1_440),
    files: {
      fileBytes: parseCount(source, 'SERVICE_FILE_MAX_MB', DEFAULT_FILE_LIMITS.fileBytes / MiB, MESSAGE_LIMITS.bytes / MiB) * MiB,
      siteBytes: parseCount(source, 'SERVICE_SITE_FILES_MB', DEFAULT_FILE_LIMITS.siteBytes / MiB, 1_000_000) * MiB,
    },
    mailAttachBytes: parseCount(source, 'SERVICE_MAIL_ATTACHMENTS_MB', DEFAULT_MAIL_ATTACH_BYTES / MiB, 25) * MiB,
    ...parseMail(source, base),
    ...parseReceiver(source),
    limits: {
      perAddress: parseCount(source, 'SERVICE_AUTH_FAILURES_PER_ADDRESS', DEFAULT_LIMITS.perAddress, 1_000_000),
      perAccount: parseCount(source, 'SERVICE_AUTH_FAILURES_PER_ACCOUNT', DEFAULT_LIMITS.perAccount, 1_000_000),
      windowSeconds: parseCount(source, 'SERVICE_AUTH_FAILURE_WINDOW', DEFAULT_LIMITS.windowSeconds, 86_400),
    },
    rateLimits: parseRateLimits(source),
    connections: parseConnections(source),
    logLevel: parseLogLevel(source),
  }
}

const SITE_LIMIT = /^(reads|writes)=(\d{1,10})$/

/**
 * SERVICE_RATE_LIMIT_READS, _WRITES, _ANONYMOUS and _WINDOW; SERVICE_RATE_LIMIT_SITES gives sites
 * their own reads and writes: `demo:reads=20000,writes=2000 other:reads=500` (space-separated).
 */
function parseRateLimits(source: ConfigSource): RateLimitSettings {
  const sites: RateLimitSettings['sites'] = {}
  for (const entry of (source.env.SERVICE_RATE_LIMIT_SITES ?? '').split(/\s+/).filter(Boolean)) {
    const colon = entry.lastIndexOf(':')
    const permalink = entry.slice(0, colon)
    const own: RateLimitSettings['sites'][string] = {}
    for (const part of colon > 0 ? entry.slice(colon + 1).split(',') : ['']) {
      const match = SITE_LIMIT.exec(part)
      const limit = Number(match?.[2])
      if (!match || limit < 1 || limit > MAX_RATE_LIMIT) {
        throw new ConfigError(`SERVICE_RATE_LIMIT_SITES takes <permalink>:reads=<n>,writes=<n> entries (n from 1 to ${MAX_RATE_LIMIT}), separated by spaces; "${entry}" is not one`)
      }
      own[match[1] as 'reads' | 'writes'] = limit
    }
    sites[permalink] = own
  }
  return {
    windowSeconds: parseCount(source, 'SERVICE_RATE_LIMIT_WINDOW', DEFAULT_RATE_LIMITS.windowSeconds, 86_400),
    reads: parseCount(source, 'SERVICE_RATE_LIMIT_READS', DEFAULT_RATE_LIMITS.reads, MAX_RATE_LIMIT),
    writes: parseCount(source, 'SERVICE_RATE_LIMIT_WRITES', DEFAULT_RATE_LIMITS.writes, MAX_RATE_LIMIT),
    anonymous: parseCount(source, 'SERVICE_RATE_LIMIT_ANONYMOUS', DEFAULT_RATE_LIMITS.anonymous, MAX_RATE_LIMIT),
    sites,
  }
}
