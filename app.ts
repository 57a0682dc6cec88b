import Fastify, { type FastifyError } from 'fastify'
import { DEFAULT_SECURITY_LOG_DAYS, DEFAULT_SUDO_MINUTES, type Config } from './config.ts'
import { DEFAULT_LIMITS } from './plugins/auth/limits.ts'
import { systemClock, type Clock } from './lib/clock.ts'
import { defaultConnectionSettings, guardConnections, timeoutOptions, type ConnectionSettings } from './lib/connections.ts'
import { createClientErrorHandler, frameworkErrors, refuseConnect } from './plugins/http/framework-errors.ts'
import { nameEveryPlugin } from './plugins/http/plugin-names.ts'
import { NUL_PROBLEM } from './lib/nul.ts'
import { redactUrl } from './lib/redact.ts'
import { createRefusalLog, type RefusalLog, type RefusalLogOptions } from './lib/refusals.ts'
import { loggerOptions, OneLinePerRequest } from './plugins/http/request-log.ts'
import { sharedSchemaCompilers } from './plugins/http/schema-compilers.ts'
import { answerUnavailable, refusedUnstorableText } from './plugins/http/database-refusals.ts'
import { clientErrorBody } from './plugins/http/validation.ts'
import authentication from './plugins/auth/authenticate.ts'
import notesOnly from './plugins/auth/notes-only.ts'
import auditRoutes from './routes/api/audit-log.ts'
import scheduleRoutes from './routes/api/schedules.ts'
import slaPolicyRoutes from './routes/api/sla-policies.ts'
import reportRoutes from './routes/api/reports.ts'
import challenge from './plugins/auth/challenge.ts'
import authLimits from './plugins/auth/limits.ts'
import rateLimits, { DEFAULT_RATE_LIMITS } from './plugins/rate-limits.ts'
import passwordVerifier from './plugins/auth/password-verifier.ts'
import configPlugin from './plugins/config.ts'
import database from './plugins/database.ts'
import serverKey from './plugins/server-key.ts'
import shutdown from './plugins/shutdown.ts'
import idleMemory, { type IdleMemoryOptions } from './plugins/idle-memory.ts'
import transportSecurity, { hstsByDefault } from './plugins/transport-security.ts'
import oauth from './plugins/oauth/index.ts'
import expiryNotices from './plugins/expiry-notices.ts'
import mail from './plugins/mail.ts'
import administration from './plugins/administration.ts'
import securityLogPruning from './plugins/security-log-pruning.ts'
import { discussionStores, oauthStore, secondFactorStore, securityLogStore, signInProviderStore, sessionStore, siteStore, tokenStore, userStore, webhookStore } from './plugins/stores.ts'
import webhookDelivery, { type DeliverySettings } from './plugins/webhooks/delivery.ts'
import presence from './plugins/presence.ts'
import webhookRoutes from './routes/api/webhooks.ts'
import savedReplyRoutes from './routes/api/saved-replies.ts'
import fieldRoutes from './routes/api/fields.ts'
import signInProviderRoutes from './routes/api/sign-in-providers.ts'
import customerRoutes from './routes/api/customers.ts'
import privacyRoutes from './routes/api/privacy.ts'
import ruleRoutes from './routes/api/rules.ts'
import senderRuleRoutes from './routes/api/sender-rules.ts'
import { eventRender } from './routes/api/webhook-events.ts'
import versioning from './plugins/versioning.ts'
import administrationApi from './routes/api/administration.ts'
import fileRoutes from './routes/api/files.ts'
import mailboxRoutes from './routes/api/mailboxes.ts'
import teamRoutes from './routes/api/team.ts'
import fileSweep from './plugins/file-sweep.ts'
import slaAlerts from './plugins/sla-alerts.ts'
import retention from './plugins/retention.ts'
import reportDigest from './plugins/report-digest.ts'
import reportTimes from './plugins/report-times.ts'
import searchBackfill from './plugins/search-backfill.ts'
import mailFetcher from './plugins/mail/fetcher.ts'
import mailHome from './plugins/mail/home.ts'
import mailReceiver from './plugins/mail/receiver.ts'
import mailSender from './plugins/mail/sender.ts'
import mailOAuth from './plugins/mail/oauth.ts'
import companySignIn from './plugins/company-sign-in.ts'
import { DEFAULT_FILE_LIMITS } from './lib/files.ts'
import discussionRoutes from './routes/api/discussions/index.ts'
import mcpRoutes from './routes/api/mcp/index.ts'
import healthRoutes from './routes/health.ts'
import apiNotFound from './routes/api/not-found.ts'
import personalTokenRoutes from './routes/api/personal-tokens.ts'
import siteRoutes from './routes/api/site.ts'
import openapiRoutes from './routes/openapi.ts'
import readmeRoute from './routes/readme.ts'
import rootRoutes from './routes/root.ts'
import tokenLeakRoutes from './routes/token-leaks.ts'
import wellKnownRoutes from './routes/well-known.ts'
import webPages from './routes/web/index.ts'
import { addPageConstraint } from './routes/web/queue.ts'
import idempotency from './plugins/http/idempotency.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The refusals below the routes and past the rate limits, logged and counted (lib/refusals.ts). */
    refusals: RefusalLog
  }
}

export interface AppOptions {
  config: Pick<Config, 'baseUrl' | 'siteUrl' | 'databaseAddress' | 'secret'> &
    Partial<Pick<Config, 'trustProxy' | 'limits' | 'rateLimits' | 'hsts' | 'logLevel' | 'postgres' | 'oauthRegistration' | 'mcpAllowedOrigins' | 'leakReportKey' | 'securityLogDays' | 'mail' | 'mailAttachBytes' | 'sudoMinutes' | 'files' | 'mailReceiver' | 'mailFetchSeconds' | 'slaAlertSeconds' | 'retentionSeconds' | 'mailSpamHeaders' | 'mailRspamd' | 'webhooks' | 'outboxSend'>> & {
      /** The timeouts and caps (config.ts); each one left out takes its default (lib/connections.ts). */
      connections?: Partial<ConnectionSettings>
    }
  clock?: Clock
  /** How long a write waits for another process's lock before the request gets 503 (db/sqlite/client.ts). */
  busyTimeoutMs?: number
  /** Where JSON log lines go (standard output for the server); no logging when absent. */
  logStream?: { write(line: string): void }
  /** How refusals are counted before they are summarised (lib/refusals.ts); tests shorten the window. */
  refusalLog?: RefusalLogOptions
  /** When the listening server gives memory back while idle (plugins/idle-memory.ts); tests shorten the wait. */
  idleMemory?: IdleMemoryOptions
  /** How often the outbox is sent (plugins/mail/sender.ts, SEND_EVERY_MS); tests shorten it. */
  outboxEveryMs?: number
  /** How long a mail of the outbox is held at a time while it is sent (plugins/mail/sender.ts, LEASE_MS); tests shorten it. */
  outboxLeaseMs?: number
  /** How webhooks' names are looked up and their retries jittered (plugins/webhooks/delivery.ts); tests give their own. */
  webhookDelivery?: Pick<DeliverySettings, 'resolve' | 'random'>
  /** How long a repeat waits for the first request with its Idempotency-Key, and how often old keys are removed (plugins/http/idempotency.ts); tests shorten them. */
  idempotency?: { waitMs?: number; pruneEveryMs?: number }
  /** How often SLA warnings and breaches are looked for (plugins/sla-alerts.ts); tests tell them by hand. */
  slaAlerts?: { everyMs?: number }
  /** How often the weekly digest is looked for (plugins/report-digest.ts); tests make it often. */
  reportDigest?: { everyMs?: number }
  /** How often the reports' times are folded into their day rows (plugins/report-times.ts); tests make it often. */
  reportTimes?: { everyMs?: number }
}

// Request bodies larger than this are refused with 413 before they are read.
export const BODY_LIMIT = 1024 * 1024

/** The whole service as one Fastify instance; the server and the tests build it the same way. */
export function buildApp(options: AppOptions) {
  const { config } = options
  const connections = { ...defaultConnectionSettings(), ...config.connections }
  // Timeouts, caps, bodies over the limit, bad bytes: a warn line each, counted (lib/refusals.ts).
  const refusals = createRefusalLog(() => app.log, options.refusalLog)
  const app = Fastify({
    bodyLimit: BODY_LIMIT,
    // Only the proxies named by SERVICE_TRUST_PROXY may set the client address (request.ip).
    trustProxy: config.trustProxy ?? false,
    logger: options.logStream ? loggerOptions(options.logStream, config.logLevel) : false,
    logController: new OneLinePerRequest(refusals),
    // A path Fastify cannot route and bytes that are not HTTP get the JSON error shape too.
    frameworkErrors,
    clientErrorHandler: createClientErrorHandler(refusals),
    // The whole request, its headers, and an idle keep-alive connection each have a time limit.
    ...timeoutOptions(connections),
    // Each route schema compiled once per process, however many apps it builds (the suite's).
    schemaController: sharedSchemaCompilers,
  })
  // Each plugin named by its function before Fastify looks for it among every loaded module (plugins/http/plugin-names.ts).
  nameEveryPlugin(app)
  app.decorate('refusals', refusals)
  // The queue's pages share their addresses with the API where the site URL does (routes/web/queue.ts).
  // Before any route: the router builds its whole tree again for every strategy added.
  addPageConstraint(app)

  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A locked, full or unwritable database file: the request did not happen; try again later.
    const unavailable = answerUnavailable(error, request, reply)
    if (unavailable) return reply.send(unavailable.body)
    // A U+0000 that got past the schemas and the stores' checks: PostgreSQL refused the text. The
    // client's mistake, answered like a field at fault (docs/decisions.md, "Decided while building").
    if (refusedUnstorableText(error, request)) {
      return reply.code(400).send(clientErrorBody({ message: '', fields: [{ field: '(request)', problem: NUL_PROBLEM }] }))
    }
    const status = error.statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(500).send({ error: 'internal_error', message: 'Something went wrong on our side.' })
    }
    return reply.code(status).send(clientErrorBody(error, request.routeOptions.bodyLimit))
  })
  // Node hands CONNECT to its own event, not to Fastify: refused there in the JSON shape.
  app.server.on('connect', refuseConnect(refusals))
  // The connection caps; the summaries still being counted are written when the server closes.
  guardConnections(app.server, connections, refusals)
  app.server.on('close', () => refusals.flush())
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: 'not_found', message: `There is nothing at ${request.method} ${redactUrl(request.url)}.` }),
  )

  // Shared concerns, in the order they depend on each other.
  app.register(shutdown)
  app.register(idleMemory, options.idleMemory ?? {})
  app.register(transportSecurity, { enabled: config.hsts ?? hstsByDefault(config.baseUrl, config.siteUrl) })
  app.register(configPlugin, { config, clock: options.clock ?? systemClock })
  app.register(serverKey, { databaseAddress: config.databaseAddress, secret: config.secret })
  app.register(database, { databaseAddress: config.databaseAddress, busyTimeoutMs: options.busyTimeoutMs, postgres: config.postgres })
  app.register(siteStore)
  app.register(userStore)
  app.register(sessionStore)
  // The sites' webhooks, and the sink of events the stores after it are given: what they tell of
  // goes out as the API's v1 JSON, made by its views (routes/api/webhook-events.ts).
  app.register(webhookStore, { render: eventRender })
  app.register(tokenStore)
  app.register(discussionStores)
  app.register(oauthStore)
  app.register(securityLogStore)
  app.register(secondFactorStore)
  app.register(signInProviderStore)
  // Staff sign in with the company's account: the protocol with the sites' identity providers.
  app.register(companySignIn)
  app.register(securityLogPruning, { days: config.securityLogDays ?? DEFAULT_SECURITY_LOG_DAYS })
  app.register(fileSweep)
  app.register(slaAlerts, { everyMs: (config.slaAlertSeconds ?? 30) * 1000, ...options.slaAlerts })
  // Each site's retention: its resolved discussions past the months it keeps them, deleted.
  app.register(retention, { everyMs: (config.retentionSeconds ?? 3_600) * 1000 })
  // The weekly digest of the reports, to the administrators who asked for it.
  app.register(reportDigest, options.reportDigest ?? {})
  // The reports' times, added apart by the writes, folded into their day rows' histograms.
  app.register(reportTimes, options.reportTimes ?? {})
  // The search index of the discussions from before it, in batches (plugins/search-backfill.ts).
  app.register(searchBackfill)
  // Who else is on a discussion's page, told between the processes and kept by none (plugins/presence.ts).
  app.register(presence)
  // Where mail and webhooks are at home: a restored or copied database holds them until resumed.
  app.register(mailHome)
  // Mail, when SERVICE_SMTP_URL is set; then mails 7 days and 1 day before a personal token expires.
  app.register(mail, { settings: config.mail })
  app.register(expiryNotices)
  // Mailboxes connected with OAuth: the access tokens they sign in to IMAP and SMTP with, renewed in time.
  app.register(mailOAuth)
  // Webhooks out: a row of the outbox posted to its endpoint, signed, under its lease.
  app.register(webhookDelivery, { ...config.webhooks, ...options.webhookDelivery })
  // The outbox's sender: mail (replies to discussions that came by mail) through that mailer, and webhooks.
  app.register(mailSender, {
    send: config.outboxSend ?? true,
    ...(options.outboxEveryMs !== undefined && { firstAfterMs: options.outboxEveryMs, everyMs: options.outboxEveryMs }),
    ...(options.outboxLeaseMs !== undefined && { leaseMs: options.outboxLeaseMs }),
    ...(config.mailAttachBytes !== undefined && { attachBytes: config.mailAttachBytes }),
  })
  // Mail in, when SERVICE_MAIL_RECEIVER is set: the sites' mailbox addresses, into one pipeline.
  const spam = { headers: config.mailSpamHeaders ?? true, ...(config.mailRspamd && { rspamd: config.mailRspamd }) }
  app.register(mailReceiver, { settings: config.mailReceiver, limits: config.files ?? DEFAULT_FILE_LIMITS, spam })
  // Mail in by IMAP: each mailbox with an IMAP address, fetched by one process at a time.
  app.register(mailFetcher, { everyMs: (config.mailFetchSeconds ?? 60) * 1000, limits: config.files ?? DEFAULT_FILE_LIMITS, spam })
  // What site administrators do to credentials and policy, for their pages and the API.
  app.register(administration)
  // Authentication's shared parts: the challenge header, the failure budgets and the password
  // verifier, at the root because the sign-in pages share the last two with the API.
  app.register(challenge)
  app.register(authLimits, { settings: config.limits ?? DEFAULT_LIMITS })
  app.register(rateLimits, { settings: config.rateLimits ?? DEFAULT_RATE_LIMITS })
  app.register(passwordVerifier)
  // The OAuth authorization server for applications: /oauth/* and its metadata (plugins/oauth).
  // Before the OpenAPI plugin: its endpoints are OAuth's, described by its own metadata, not the API's.
  app.register(oauth, { registration: config.oauthRegistration ?? true })

  // Public, unauthenticated documents. The OpenAPI plugin goes first: it describes the routes
  // registered after it.
  app.register(openapiRoutes)
  app.register(rootRoutes)
  app.register(wellKnownRoutes)
  app.register(readmeRoute)
  app.register(healthRoutes)
  // Signed reports of leaked tokens (404 without SERVICE_LEAK_REPORT_KEY).
  app.register(tokenLeakRoutes, { key: config.leakReportKey })

  // The v1 API: every route negotiates its media type, then authenticates, before any body is read.
  app.register(async function api(api) {
    // Authentication first: its hook marks every answer private, a 406 included.
    api.register(authentication)
    api.register(versioning)
    api.register(async function authenticated(routes) {
      routes.addHook('onRequest', routes.authenticate)
      // A collaborator's writes: internal notes only (plugins/auth/notes-only.ts), before a stored answer is replayed.
      routes.register(notesOnly)
      // Idempotency-Key on every POST of the routes below (plugins/http/idempotency.ts).
      routes.register(idempotency, options.idempotency ?? {})
      routes.register(siteRoutes)
      routes.register(personalTokenRoutes)
      routes.register(discussionRoutes, { fileLimits: config.files ?? DEFAULT_FILE_LIMITS })
      // Uploads and the download of attachments (the discussion routes take files with a comment too).
      routes.register(fileRoutes, { limits: config.files ?? DEFAULT_FILE_LIMITS })
      // The administrators' resources: the credentials inventory and the token policy.
      routes.register(administrationApi)
      // The administrators' mailboxes: the addresses a site takes mail at.
      routes.register(mailboxRoutes)
      // The administrators' team: the site's support staff, and invitations to it.
      routes.register(teamRoutes)
      // The administrators' record of changes: who changed what in the site, and when.
      routes.register(auditRoutes)
      // The administrators' webhooks: where the site's events are posted, and how that went.
      routes.register(webhookRoutes)
      // The site's saved replies and macros (the same rows): read by its staff, filled in for a discussion; written by its administrators.
      routes.register(savedReplyRoutes)
      routes.register(fieldRoutes)
      // The site's identity providers, for its staff's sign-in with the company's account (its administrators').
      routes.register(signInProviderRoutes)
      // A customer of the site, with the team's record of them (its customer fields' values).
      routes.register(customerRoutes)
      // A customer's data on request (issue 74): their export, their erasure, the site's retention.
      routes.register(privacyRoutes)
      // The site's rules: read by its staff, written and tried by its administrators.
      routes.register(ruleRoutes)
      // The site's business hours: read by its staff, written by its administrators.
      routes.register(scheduleRoutes)
      // The site's SLA policies: read by its staff, written by its administrators.
      routes.register(slaPolicyRoutes)
      // The site's reports: read by its staff, as JSON or CSV.
      routes.register(reportRoutes)
      // What the site says of senders: allowed, or blocked as spam (its administrators').
      routes.register(senderRuleRoutes)
      // The MCP endpoint: its tools are requests to the routes above, with the caller's token.
      routes.register(mcpRoutes, { allowedOrigins: config.mcpAllowedOrigins ?? [] })
      routes.register(apiNotFound)
    })
  })

  // The supporter web pages, under the site URL. They never accept an API credential.
  app.register(webPages, { siteUrl: config.siteUrl, sudoMinutes: config.sudoMinutes ?? DEFAULT_SUDO_MINUTES, fileLimits: config.files ?? DEFAULT_FILE_LIMITS })

  return app
}
