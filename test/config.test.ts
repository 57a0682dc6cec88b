import t from 'tap'
import { selfSigned } from './fixtures/certificate.ts'
import { loadConfig } from '../config.ts'
import { DEFAULT_LIMITS } from '../plugins/auth/limits.ts'
import { DEFAULT_RATE_LIMITS } from '../plugins/rate-limits.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// 20,000 open files, as on the machine the defaults were measured on: a cap of 10,000 connections.
const load = (env: Record<string, string> = {}, flags: Record<string, string> = {}, openFiles = 20_000) => loadConfig({ env, flags, openFiles })

const DEFAULT_CONNECTIONS = { requestTimeoutMs: 30_000, headersTimeoutMs: 15_000, keepAliveTimeoutMs: 5_000, maxConnections: 10_000, maxConnectionsPerAddress: 0 }

t.test('defaults', async (t) => {
  t.same(load(), {
    port: 3000,
    host: '127.0.0.1',
    databaseAddress: './data/service.db',
    baseUrl: 'http://localhost:3000',
    siteUrl: 'http://localhost:3000/{site}',
    trustProxy: false,
    limits: { perAddress: 20, perAccount: 5, windowSeconds: 300 },
    rateLimits: { windowSeconds: 3600, reads: 10_000, writes: 1_000, anonymous: 1_000, sites: {} },
    hsts: false,
    oauthRegistration: true,
    mcpAllowedOrigins: [],
    securityLogDays: 400,
    mailFetchSeconds: 60,
    slaAlertSeconds: 30,
    retentionSeconds: 3600,
    mailSpamHeaders: true,
    webhooks: { allowed: [], timeoutMs: 10_000 },
    sudoMinutes: 15,
    files: { fileBytes: 10 * 1024 * 1024, siteBytes: 1024 * 1024 * 1024 },
    mailAttachBytes: 10 * 1024 * 1024,
    connections: DEFAULT_CONNECTIONS,
    logLevel: 'info',
    demo: true,
    outboxSend: true,
  })
  t.equal(load({ SERVICE_DEMO: 'off' }).demo, false, 'a production start without the demo site')
  t.same(DEFAULT_LIMITS, { perAddress: 20, perAccount: 5, windowSeconds: 300 }, 'the documented defaults')
  t.equal(load({ PORT: '8080' }).baseUrl, 'http://localhost:8080', 'default addresses follow the port')
  t.equal(load({ PORT: '8080' }).siteUrl, 'http://localhost:8080/{site}')
  // A start with only the API's address: the pages, and the links mail gives customers, are under it, not on localhost.
  t.equal(load({ SERVICE_BASE_URL: 'https://desk.example.com/' }).siteUrl, 'https://desk.example.com/{site}')
  t.equal(load({ SERVICE_BASE_URL: 'https://desk.example.com', SERVICE_SITE_URL: 'https://help.example.com/{site}' }).siteUrl, 'https://help.example.com/{site}', 'its own address when given')
})

t.test('environment, and flags over the environment', async (t) => {
  const config = load(
    { PORT: '4000', HOST: '0.0.0.0', SERVICE_DB: '/srv/a.db', SERVICE_BASE_URL: 'https://api.example.com/', SERVICE_SITE_URL: 'https://help.example.com/{site}/' },
    { port: '5000', db: 'b.db' },
  )
  t.same(config, {
    port: 5000,
    host: '0.0.0.0',
    databaseAddress: 'b.db',
    baseUrl: 'https://api.example.com',
    siteUrl: 'https://help.example.com/{site}',
    trustProxy: false,
    limits: DEFAULT_LIMITS,
    rateLimits: DEFAULT_RATE_LIMITS,
    hsts: true,
    oauthRegistration: true,
    mcpAllowedOrigins: [],
    securityLogDays: 400,
    mailFetchSeconds: 60,
    slaAlertSeconds: 30,
    retentionSeconds: 3600,
    mailSpamHeaders: true,
    webhooks: { allowed: [], timeoutMs: 10_000 },
    sudoMinutes: 15,
    files: { fileBytes: 10 * 1024 * 1024, siteBytes: 1024 * 1024 * 1024 },
    mailAttachBytes: 10 * 1024 * 1024,
    connections: DEFAULT_CONNECTIONS,
    logLevel: 'info',
    demo: true,
    outboxSend: true,
  })
})

t.test('timeouts, connection caps and the log level: environment, flags over it, and what is refused', async (t) => {
  const env = {
    SERVICE_REQUEST_TIMEOUT: '60',
    SERVICE_HEADERS_TIMEOUT: ' 20 ',
    SERVICE_KEEP_ALIVE_TIMEOUT: '75',
    SERVICE_MAX_CONNECTIONS: '500',
    SERVICE_MAX_CONNECTIONS_PER_ADDRESS: '50',
    SERVICE_LOG_LEVEL: ' WARN ',
  }
  t.same(load(env).connections, { requestTimeoutMs: 60_000, headersTimeoutMs: 20_000, keepAliveTimeoutMs: 75_000, maxConnections: 500, maxConnectionsPerAddress: 50 })
  t.equal(load(env).logLevel, 'warn')
  const flags = {
    'request-timeout': '10',
    'headers-timeout': '10',
    'keep-alive-timeout': '1',
    'max-connections': '100',
    'max-connections-per-address': '0',
    'log-level': 'error',
  }
  t.same(load(env, flags).connections, { requestTimeoutMs: 10_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 1_000, maxConnections: 100, maxConnectionsPerAddress: 0 })
  t.equal(load(env, flags).logLevel, 'error')
  t.same(load({ SERVICE_REQUEST_TIMEOUT: '', SERVICE_MAX_CONNECTIONS: ' ', SERVICE_LOG_LEVEL: '' }).connections, DEFAULT_CONNECTIONS, 'blank is unset')
  t.equal(load({}, {}, 1024).connections.maxConnections, 921, 'the default cap follows the open-file limit, with room for the database and the logs')
  t.ok(loadConfig({ env: {}, flags: {} }).connections.maxConnections >= 1, "without a limit given, this process's own is read")

  const refused: [Record<string, string>, Record<string, string>, RegExp][] = [
    [{ SERVICE_REQUEST_TIMEOUT: '0' }, {}, /^SERVICE_REQUEST_TIMEOUT must be a whole number of seconds from 1 to 3600, not "0"$/],
    [{ SERVICE_HEADERS_TIMEOUT: '1.5' }, {}, /^SERVICE_HEADERS_TIMEOUT must be a whole number of seconds from 1 to 3600, not "1.5"$/],
    [{}, { 'keep-alive-timeout': '3601' }, /^--keep-alive-timeout must be a whole number of seconds from 1 to 3600, not "3601"$/],
    [{ SERVICE_KEEP_ALIVE_TIMEOUT: '5s' }, {}, /^SERVICE_KEEP_ALIVE_TIMEOUT must be a whole number of seconds/],
    [
      { SERVICE_HEADERS_TIMEOUT: '60' },
      {},
      /^SERVICE_HEADERS_TIMEOUT \(60 s\) must not be longer than SERVICE_REQUEST_TIMEOUT \(30 s\): the request timeout covers the headers too$/,
    ],
    [{ SERVICE_HEADERS_TIMEOUT: '20' }, { 'request-timeout': '10' }, /^SERVICE_HEADERS_TIMEOUT \(20 s\) must not be longer than --request-timeout \(10 s\)/],
    [{ SERVICE_MAX_CONNECTIONS: '0' }, {}, /^SERVICE_MAX_CONNECTIONS must be a whole number from 1 to 18000, not "0"$/],
    [{}, { 'max-connections': 'many' }, /^--max-connections must be a whole number from 1 to 18000, not "many"$/],
    [
      { SERVICE_MAX_CONNECTIONS: '19000' },
      {},
      /^SERVICE_MAX_CONNECTIONS is 19000, but this process may open 20000 files, which leaves room for 18000 connections beside the database and the logs: raise the limit \(ulimit -n, or LimitNOFILE= in a systemd unit\) or lower the setting$/,
    ],
    [
      { SERVICE_MAX_CONNECTIONS: '100', SERVICE_MAX_CONNECTIONS_PER_ADDRESS: '101' },
      {},
      /^SERVICE_MAX_CONNECTIONS_PER_ADDRESS must be a whole number from 0 \(no cap per address\) to the connection cap \(100\), not "101"$/,
    ],
    [{ SERVICE_MAX_CONNECTIONS_PER_ADDRESS: '-1' }, {}, /^SERVICE_MAX_CONNECTIONS_PER_ADDRESS must be a whole number from 0/],
    [{ SERVICE_LOG_LEVEL: 'verbose' }, {}, /^SERVICE_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, not "verbose"$/],
    [{}, { 'log-level': 'off' }, /^--log-level must be one of/],
  ]
  for (const [env, flags, message] of refused) t.throws(() => load(env, flags), { name: 'ConfigError', message }, JSON.stringify({ env, flags }))
})

t.test('SERVICE_HSTS: on by default when an address is https, and a switch either way', async (t) => {
  t.equal(load({ SERVICE_SITE_URL: 'https://help.example.com/{site}' }).hsts, true, 'the pages alone on https')
  t.equal(load({ SERVICE_BASE_URL: 'https://api.example.com' }).hsts, true, 'the API alone on https')
  t.equal(load({ SERVICE_BASE_URL: 'https://api.example.com', SERVICE_HSTS: 'off' }).hsts, false, 'TLS proxy sets it itself')
  t.equal(load({ SERVICE_HSTS: ' On ' }).hsts, true)
  t.equal(load({ SERVICE_HSTS: '' }).hsts, false, 'blank is unset')
  t.throws(() => load({ SERVICE_HSTS: 'yes' }), { name: 'ConfigError', message: 'SERVICE_HSTS must be on or off, not "yes"' })
})

t.test('SERVICE_OAUTH_REGISTRATION: on by default, a switch', async (t) => {
  t.equal(load({ SERVICE_OAUTH_REGISTRATION: 'off' }).oauthRegistration, false)
  t.equal(load({ SERVICE_OAUTH_REGISTRATION: 'ON' }).oauthRegistration, true)
  t.throws(() => load({ SERVICE_OAUTH_REGISTRATION: '0' }), { name: 'ConfigError', message: 'SERVICE_OAUTH_REGISTRATION must be on or off, not "0"' })
})

t.test("SERVICE_MAIL_SPAM_HEADERS: on by default; off leaves a provider's spam verdict unread", async (t) => {
  t.equal(load({ SERVICE_MAIL_SPAM_HEADERS: 'off' }).mailSpamHeaders, false)
  t.throws(() => load({ SERVICE_MAIL_SPAM_HEADERS: 'sometimes' }), { message: /SERVICE_MAIL_SPAM_HEADERS/ })
})

t.test('SERVICE_RSPAMD_URL: none by default; an http address, without credentials; SERVICE_RSPAMD_TIMEOUT its seconds', async (t) => {
  t.equal(load({}).mailRspamd, undefined)
  t.same(load({ SERVICE_RSPAMD_URL: 'http://127.0.0.1:11333' }).mailRspamd, { url: 'http://127.0.0.1:11333/', timeoutMs: 10_000 })
  t.same(load({ SERVICE_RSPAMD_URL: ' https://filter.example/rspamd/ ', SERVICE_RSPAMD_TIMEOUT: '3' }).mailRspamd, { url: 'https://filter.example/rspamd/', timeoutMs: 3_000 })
  t.throws(() => load({ SERVICE_RSPAMD_URL: 'http://user:secret@filter.example' }), { name: 'ConfigError', message: "SERVICE_RSPAMD_URL must not carry a user or a password: rspamd's normal worker asks for none" }, 'a password is not repeated')
  for (const bad of ['127.0.0.1:11333', 'ftp://filter.example', 'http://filter.example/?x=1']) {
    t.throws(() => load({ SERVICE_RSPAMD_URL: bad }), { name: 'ConfigError', message: /^SERVICE_RSPAMD_URL must be an http or https address/ }, bad)
  }
  t.throws(() => load({ SERVICE_RSPAMD_URL: 'http://127.0.0.1:11333', SERVICE_RSPAMD_TIMEOUT: '61' }), { message: /SERVICE_RSPAMD_TIMEOUT/ })
})

t.test('SERVICE_OUTBOX_SEND: on by default; off leaves the sending to another process', async (t) => {
  t.equal(load({ SERVICE_OUTBOX_SEND: 'off' }).outboxSend, false)
  t.equal(load({ SERVICE_OUTBOX_SEND: 'on' }).outboxSend, true)
  t.throws(() => load({ SERVICE_OUTBOX_SEND: 'maybe' }), { message: /SERVICE_OUTBOX_SEND/ })
})

t.test('webhooks: SERVICE_WEBHOOK_ALLOW names the private ranges allowed, SERVICE_WEBHOOK_TIMEOUT the deadline of a try', async (t) => {
  const { webhooks } = load({ SERVICE_WEBHOOK_ALLOW: '10.20.0.0/16, fd12::/64 192.168.1.7', SERVICE_WEBHOOK_TIMEOUT: '3' })
  t.same(webhooks.allowed.map(([address, bits]) => `${address.toString()}/${bits}`), ['10.20.0.0/16', 'fd12::/64', '192.168.1.7/32'])
  t.equal(webhooks.timeoutMs, 3_000)
  t.throws(() => load({ SERVICE_WEBHOOK_ALLOW: '10.0.0.0/8,intranet' }), { message: 'SERVICE_WEBHOOK_ALLOW: "intranet" is not an address or a CIDR range such as 10.0.0.0/8' })
  t.throws(() => load({ SERVICE_WEBHOOK_ALLOW: '10.0.0.0/99' }), { message: /SERVICE_WEBHOOK_ALLOW: "10.0.0.0\/99"/ })
  t.throws(() => load({ SERVICE_WEBHOOK_TIMEOUT: '0' }), { message: /SERVICE_WEBHOOK_TIMEOUT/ })
})

t.test('SERVICE_MCP_ALLOWED_ORIGINS: none by default, a list of origins', async (t) => {
  t.same(load({}).mcpAllowedOrigins, [])
  t.same(load({ SERVICE_MCP_ALLOWED_ORIGINS: ' ' }).mcpAllowedOrigins, [], 'blank is unset')
  t.same(load({ SERVICE_MCP_ALLOWED_ORIGINS: 'https://a.example, http://127.0.0.1:8080/' }).mcpAllowedOrigins, ['https://a.example', 'http://127.0.0.1:8080'])
  t.throws(() => load({ SERVICE_MCP_ALLOWED_ORIGINS: 'https://a.example/path' }), { name: 'ConfigError', message: /origins without a path/ })
  t.throws(() => load({ SERVICE_MCP_ALLOWED_ORIGINS: 'null' }), { name: 'ConfigError', message: /SERVICE_MCP_ALLOWED_ORIGINS must be an http or https address/ })
})

t.test('leak reports and the security log: from the environment, and what is refused', async (t) => {
  t.equal(load({ SERVICE_LEAK_REPORT_KEY: ` ${'k'.repeat(32)} ` }).leakReportKey, 'k'.repeat(32))
  t.notOk('leakReportKey' in load({ SERVICE_LEAK_REPORT_KEY: ' ' }), 'blank is unset')
  t.throws(() => load({ SERVICE_LEAK_REPORT_KEY: 'short' }), { name: 'ConfigError', message: /SERVICE_LEAK_REPORT_KEY must be at least 32 characters/ })
  t.equal(load({ SERVICE_SECURITY_LOG_DAYS: '30' }).securityLogDays, 30)
  t.equal(load({ SERVICE_SUDO_MINUTES: '5' }).sudoMinutes, 5)
  t.same(load({ SERVICE_FILE_MAX_MB: '25', SERVICE_SITE_FILES_MB: '50' }).files, { fileBytes: 25 * 1024 * 1024, siteBytes: 50 * 1024 * 1024 })
  t.equal(load({}).mailAttachBytes, 10 * 1024 * 1024, "a reply's files up to 10 MiB go attached to its mail by default")
  t.equal(load({ SERVICE_MAIL_ATTACHMENTS_MB: '20' }).mailAttachBytes, 20 * 1024 * 1024)
  t.throws(() => load({ SERVICE_MAIL_ATTACHMENTS_MB: '26' }), { message: 'SERVICE_MAIL_ATTACHMENTS_MB must be a whole number from 1 to 25, not "26"' })
  t.same(load({ SERVICE_MAIL_RECEIVER: '2525' }).mailReceiver, { host: '127.0.0.1', port: 2525 })
  t.same(load({ SERVICE_MAIL_RECEIVER: '0.0.0.0:25' }).mailReceiver, { host: '0.0.0.0', port: 25 })
  t.same(load({ SERVICE_MAIL_RECEIVER: '[::]:25' }).mailReceiver, { host: '::', port: 25 })
  t.same(load({ SERVICE_MAIL_RECEIVER: 'localhost:2525' }).mailReceiver, { host: 'localhost', port: 2525 })
  t.equal(load({ SERVICE_MAIL_RECEIVER: ' ' }).mailReceiver, undefined, 'blank: none')
  for (const bad of ['mail.example.com:25', '70000', 'port']) {
    t.throws(() => load({ SERVICE_MAIL_RECEIVER: bad }), { message: `SERVICE_MAIL_RECEIVER must be a port or an address and a port (0.0.0.0:25), not "${bad}"` })
  }
  const pem = selfSigned(t)
  t.same(load({ SERVICE_MAIL_RECEIVER: '2525', SERVICE_MAIL_RECEIVER_CERT: pem.certPath, SERVICE_MAIL_RECEIVER_KEY: pem.keyPath }).mailReceiver, { host: '127.0.0.1', port: 2525, tls: { cert: pem.cert, key: pem.key } })
  t.throws(() => load({ SERVICE_MAIL_RECEIVER: '2525', SERVICE_MAIL_RECEIVER_CERT: pem.certPath }), { message: 'SERVICE_MAIL_RECEIVER_CERT and SERVICE_MAIL_RECEIVER_KEY go together: set both, or neither' })
  t.throws(() => load({ SERVICE_MAIL_RECEIVER: '2525', SERVICE_MAIL_RECEIVER_CERT: pem.certPath, SERVICE_MAIL_RECEIVER_KEY: '/nowhere/key.pem' }), { message: 'SERVICE_MAIL_RECEIVER_KEY must be a readable PEM file: ENOENT for "/nowhere/key.pem"' })
  t.throws(() => load({ SERVICE_FILE_MAX_MB: '26' }), { message: 'SERVICE_FILE_MAX_MB must be a whole number from 1 to 25, not "26"' }, 'no file larger than a message may carry')
  t.throws(() => load({ SERVICE_SUDO_MINUTES: '1441' }), { message: 'SERVICE_SUDO_MINUTES must be a whole number from 1 to 1440, not "1441"' })
  t.throws(() => load({ SERVICE_SECURITY_LOG_DAYS: '0' }), { name: 'ConfigError' })
})

t.test('expiry notice mail: SERVICE_SMTP_URL and SERVICE_MAIL_FROM, and what is refused without repeating a password', async (t) => {
  t.notOk('mail' in load({}), 'no mail by default')
  t.notOk('mail' in load({ SERVICE_SMTP_URL: '  ' }), 'blank is unset')
  t.same(load({ SERVICE_SMTP_URL: ' smtp://ann:s3cret@mail.example.test:587 ', SERVICE_BASE_URL: 'https://help.example.com' }).mail, {
    smtpUrl: 'smtp://ann:s3cret@mail.example.test:587',
    from: 'Service Desk <service-desk@help.example.com>',
  })
  t.same(load({ SERVICE_SMTP_URL: 'smtps://mail.example.test', SERVICE_MAIL_FROM: ' Help <help@example.com> ' }).mail?.from, 'Help <help@example.com>')
  for (const url of ['mail.example.test:25', 'http://mail.example.test', 'smtp://', 'smtp://ann:s3cret@']) {
    t.throws(() => load({ SERVICE_SMTP_URL: url }), { name: 'ConfigError', message: /^SERVICE_SMTP_URL must be an smtp:\/\/ or smtps:\/\/ address with a host/ }, url)
    t.notMatch(String((() => { try { load({ SERVICE_SMTP_URL: url }) } catch (e) { return (e as Error).message } })()), 's3cret', 'the password is not repeated')
  }
  t.throws(() => load({ SERVICE_SMTP_URL: 'smtp://mail.example.test', SERVICE_MAIL_FROM: 'nobody' }), { name: 'ConfigError', message: /SERVICE_MAIL_FROM must be one mail address/ })
  t.throws(() => load({ SERVICE_SMTP_URL: 'smtp://mail.example.test', SERVICE_MAIL_FROM: 'a@example.com\r\nBcc: b@example.com' }), {
    message: 'SERVICE_MAIL_FROM must be one mail address, such as "Service Desk <help@example.com>", not "a@example.com  Bcc: b@example.com"',
  })
})

t.test('the trusted proxies and the failure limits come from the environment', async (t) => {
  const config = load({
    SERVICE_TRUST_PROXY: ' 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8,loopback ',
    SERVICE_AUTH_FAILURES_PER_ADDRESS: '100',
    SERVICE_AUTH_FAILURES_PER_ACCOUNT: '3',
    SERVICE_AUTH_FAILURE_WINDOW: '60',
  })
  t.equal(config.trustProxy, '127.0.0.1,10.0.0.0/8,::1,fd00::/8,loopback')
  t.same(config.limits, { perAddress: 100, perAccount: 3, windowSeconds: 60 })
  t.equal(load({ SERVICE_TRUST_PROXY: ' ' }).trustProxy, false, 'blank is unset')
  const refused: [Record<string, string>, RegExp][] = [
    [{ SERVICE_TRUST_PROXY: 'true' }, /^SERVICE_TRUST_PROXY must be a comma-separated list of proxy addresses or ranges/],
    [{ SERVICE_TRUST_PROXY: '2' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_TRUST_PROXY: '10.0.0.0/33' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_TRUST_PROXY: '::1/129' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_TRUST_PROXY: '10.0.0.0/8/1' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_TRUST_PROXY: '10.0.0.0/x' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_TRUST_PROXY: 'proxy.example.com' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_TRUST_PROXY: '127.0.0.1,' }, /^SERVICE_TRUST_PROXY must be/],
    [{ SERVICE_AUTH_FAILURES_PER_ADDRESS: '0' }, /^SERVICE_AUTH_FAILURES_PER_ADDRESS must be a whole number from 1 to 1000000, not "0"$/],
    [{ SERVICE_AUTH_FAILURES_PER_ACCOUNT: 'five' }, /^SERVICE_AUTH_FAILURES_PER_ACCOUNT must be a whole number/],
    [{ SERVICE_AUTH_FAILURE_WINDOW: '86401' }, /^SERVICE_AUTH_FAILURE_WINDOW must be a whole number from 1 to 86400/],
    [{ SERVICE_AUTH_FAILURE_WINDOW: '-5' }, /^SERVICE_AUTH_FAILURE_WINDOW must be a whole number/],
  ]
  for (const [env, message] of refused) t.throws(() => load(env), { name: 'ConfigError', message }, JSON.stringify(env))
})

t.test("the rate limits, and a site's own, come from the environment", async (t) => {
  const config = load({
    SERVICE_RATE_LIMIT_READS: '500',
    SERVICE_RATE_LIMIT_WRITES: '50',
    SERVICE_RATE_LIMIT_ANONYMOUS: '60',
    SERVICE_RATE_LIMIT_WINDOW: '60',
    SERVICE_RATE_LIMIT_SITES: ' demo:reads=20000,writes=2000   other-site:writes=5 ',
  })
  t.same(config.rateLimits, { windowSeconds: 60, reads: 500, writes: 50, anonymous: 60, sites: { demo: { reads: 20_000, writes: 2_000 }, 'other-site': { writes: 5 } } })
  const sites = /^SERVICE_RATE_LIMIT_SITES takes <permalink>:reads=<n>,writes=<n> entries \(n from 1 to 100000000\), separated by spaces; /
  const refused: [Record<string, string>, RegExp][] = [
    [{ SERVICE_RATE_LIMIT_READS: '0' }, /^SERVICE_RATE_LIMIT_READS must be a whole number from 1 to 100000000, not "0"$/],
    [{ SERVICE_RATE_LIMIT_WRITES: '100000001' }, /^SERVICE_RATE_LIMIT_WRITES must be a whole number from 1 to 100000000/],
    [{ SERVICE_RATE_LIMIT_WINDOW: '86401' }, /^SERVICE_RATE_LIMIT_WINDOW must be a whole number from 1 to 86400/],
    [{ SERVICE_RATE_LIMIT_SITES: 'demo' }, sites],
    [{ SERVICE_RATE_LIMIT_SITES: ':reads=5' }, sites],
    [{ SERVICE_RATE_LIMIT_SITES: 'demo:reads=0' }, sites],
    [{ SERVICE_RATE_LIMIT_SITES: 'demo:reads=100000001' }, sites],
    [{ SERVICE_RATE_LIMIT_SITES: 'demo:anonymous=5' }, sites],
    [{ SERVICE_RATE_LIMIT_SITES: 'demo:reads=5,' }, sites],
  ]
  for (const [env, message] of refused) t.throws(() => load(env), { name: 'ConfigError', message }, JSON.stringify(env))
})

t.test('a bad value is one clear line naming the variable or flag', async (t) => {
  const cases: [Record<string, string>, Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, {}, /^PORT must be a port number from 0 to 65535, not "abc"$/],
    [{}, { port: '70000' }, /^--port must be a port number/],
    [{ HOST: ' ' }, {}, /^HOST must not be empty$/],
    [{ SERVICE_DB: '' }, {}, /^SERVICE_DB must not be empty$/],
    [{ SERVICE_BASE_URL: 'api.example.com' }, {}, /^SERVICE_BASE_URL must be an http or https address/],
    [{ SERVICE_BASE_URL: 'ftp://api.example.com' }, {}, /^SERVICE_BASE_URL must be an http or https address/],
    [{ SERVICE_BASE_URL: 'https://api.example.com/v1' }, {}, /^SERVICE_BASE_URL must be an origin without a path/],
    [{ SERVICE_BASE_URL: 'https://u:p@api.example.com' }, {}, /^SERVICE_BASE_URL must be an http or https address/],
    [{ SERVICE_SITE_URL: 'https://help.example.com' }, {}, /^SERVICE_SITE_URL must contain \{site\} exactly once/],
    [{ SERVICE_SITE_URL: 'https://{site}.example.com/' }, {}, /^SERVICE_SITE_URL must have \{site\} in its path/],
    [{}, { 'site-url': 'https://h/{site}?x=1' }, /^--site-url must be an http or https address/],
    [{}, { 'site-url': '{site}' }, /^--site-url must be an http or https address/],
  ]
  for (const [env, flags, message] of cases) {
    t.throws(() => load(env, flags), { name: 'ConfigError', message }, JSON.stringify({ env, flags }))
  }
})

t.test('SERVICE_SECRET: from the environment only, at least 32 characters, never echoed', async (t) => {
  const secret = '0123456789abcdef0123456789abcdef'
  t.equal(load({ SERVICE_SECRET: ` ${secret}\n` }).secret, secret, 'surrounding white space is not part of it')
  t.notOk('secret' in load(), 'absent unless set: the key file is used')
  for (const value of ['', 'too-short-a-secret', ' '.repeat(40)]) {
    t.throws(
      () => load({ SERVICE_SECRET: value }),
      { name: 'ConfigError', message: /^SERVICE_SECRET must be at least 32 characters, such as the output of: openssl rand -hex 32$/ },
      JSON.stringify(value),
    )
  }
})

t.test('a PostgreSQL address: SERVICE_SECRET is required, and the pool settings are read', async (t) => {
  const secret = '0123456789abcdef0123456789abcdef'
  const address = 'postgres://desk:pw@db.example.com:5432/desk?schema=help'
  for (const [env, flags] of [
    [{ SERVICE_DB: address }, {}],
    [{}, { db: 'postgresql://db.example.com/desk' }],
    [{ SERVICE_DB: 'POSTGRES://db.example.com/desk' }, {}],
  ] as [Record<string, string>, Record<string, string>][]) {
    const name = env.SERVICE_DB ? 'SERVICE_DB' : '--db'
    t.throws(
      () => load(env, flags),
      {
        name: 'ConfigError',
        message: `${name} names a PostgreSQL database: set SERVICE_SECRET, the same in every process, such as the output of: openssl rand -hex 32`,
      },
      JSON.stringify({ env, flags }),
    )
  }
  const defaults = load({ SERVICE_DB: address, SERVICE_SECRET: secret })
  t.equal(defaults.databaseAddress, address, 'the address is kept whole, its schema and password too')
  t.same(defaults.postgres, { poolSize: 10, statementTimeoutMs: 5_000, connectTimeoutMs: 5_000 }, 'the documented defaults')
  t.same(
    load({ SERVICE_DB: address, SERVICE_SECRET: secret, SERVICE_DB_POOL_SIZE: '25', SERVICE_DB_STATEMENT_TIMEOUT: '30', SERVICE_DB_CONNECT_TIMEOUT: '2' }).postgres,
    { poolSize: 25, statementTimeoutMs: 30_000, connectTimeoutMs: 2_000 },
    'timeouts are given in seconds',
  )
  t.same(
    load({ SERVICE_DB: address, SERVICE_SECRET: secret, SERVICE_DB_POOL_SIZE: '1000', SERVICE_DB_STATEMENT_TIMEOUT: '3600', SERVICE_DB_CONNECT_TIMEOUT: '1' }).postgres,
    { poolSize: 1_000, statementTimeoutMs: 3_600_000, connectTimeoutMs: 1_000 },
    'the bounds are allowed',
  )
  t.notOk('postgres' in load({ SERVICE_DB_POOL_SIZE: '25', SERVICE_DB_STATEMENT_TIMEOUT: 'x' }), 'a SQLite file ignores the PostgreSQL settings')
  const refused: [Record<string, string>, string][] = [
    [{ SERVICE_DB_POOL_SIZE: '0' }, 'SERVICE_DB_POOL_SIZE must be a whole number from 1 to 1000, not "0"'],
    [{ SERVICE_DB_POOL_SIZE: '1001' }, 'SERVICE_DB_POOL_SIZE must be a whole number from 1 to 1000, not "1001"'],
    [{ SERVICE_DB_POOL_SIZE: '' }, 'SERVICE_DB_POOL_SIZE must be a whole number from 1 to 1000, not ""'],
    [{ SERVICE_DB_STATEMENT_TIMEOUT: '0.5' }, 'SERVICE_DB_STATEMENT_TIMEOUT must be a whole number from 1 to 3600, not "0.5"'],
    [{ SERVICE_DB_STATEMENT_TIMEOUT: '3601' }, 'SERVICE_DB_STATEMENT_TIMEOUT must be a whole number from 1 to 3600, not "3601"'],
    [{ SERVICE_DB_CONNECT_TIMEOUT: '5s' }, 'SERVICE_DB_CONNECT_TIMEOUT must be a whole number from 1 to 3600, not "5s"'],
    [{ SERVICE_DB_CONNECT_TIMEOUT: '-1' }, 'SERVICE_DB_CONNECT_TIMEOUT must be a whole number from 1 to 3600, not "-1"'],
  ]
  for (const [env, message] of refused) {
    t.throws(() => load({ SERVICE_DB: address, SERVICE_SECRET: secret, ...env }), { name: 'ConfigError', message }, JSON.stringify(env))
  }
})
