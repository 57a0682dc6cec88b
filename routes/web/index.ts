import reportPageRoutes from './reports.ts'
import ratingRoutes from './ratings.ts'
import { createHmac } from 'node:crypto'
import type { FileLimits } from '../../lib/files.ts'
import type { FastifyError, FastifyPluginAsync } from 'fastify'
import { answerUnavailable, refusedUnstorableText } from '../../plugins/http/database-refusals.ts'
import sessions from '../../plugins/sessions.ts'
import views from '../../plugins/views.ts'
import fp from 'fastify-plugin'
import administrationRoutes from './administration.ts'
import adminMailRoutes from './admin-mail.ts'
import adminTeamRoutes from './admin-team.ts'
import adminCategoryRoutes from './admin-categories.ts'
import adminFieldRoutes from './admin-fields.ts'
import adminRecordRoutes from './admin-record.ts'
import adminHoursRoutes from './admin-hours.ts'
import adminSlaRoutes from './admin-sla.ts'
import adminRuleRoutes from './admin-rules.ts'
import adminWebhookRoutes from './admin-webhooks.ts'
import liveRoutes from './live.ts'
import adminQueueRoutes from './admin-queue.ts'
import discussionRoutes from './discussion.ts'
import confirmRoutes from './confirm.ts'
import customerRoutes from './customers.ts'
import customerExportRoutes from './customer-export.ts'
import apiTokenRoutes from './api-tokens.ts'
import oauthRoutes from './oauth.ts'
import securityLogRoutes from './security-log.ts'
import profileRoutes from './profile.ts'
import secondFactorRoutes from './second-factors.ts'
import { secondFactorFirst } from './enrollment.ts'
import { accountWideOwnSession } from './providers.ts'
import { pageData } from './pages.ts'
import queueRoutes from './queue.ts'
import searchRoutes from './search.ts'
import signInRoutes from './sign-in.ts'
import companySignInRoutes from './company-sign-in.ts'
import adminSignInRoutes from './admin-sign-in.ts'
import adminPrivacyRoutes from './admin-privacy.ts'
import forgottenPasswordRoutes from './forgotten-password.ts'

export interface WebOptions {
  siteUrl: string
  /** How long signing in or confirming it is them lets a supporter do what needs it (routes/web/confirm.ts). */
  sudoMinutes: number
  /** The largest file and a site's space for files (lib/files.ts), for the reply form's files. */
  fileLimits: FileLimits
}

/** The path part of the site URL template, as a route prefix: `https://h/x/{site}` gives `/x/:site`. */
export function webPrefix(siteUrl: string): string {
  return new URL(siteUrl.replace('{site}', 'SITE')).pathname.replace('SITE', ':site')
}

/** Every page (the supporters', and the customers' under /help), encapsulated under the site URL's path with its own error pages. */
const webPages: FastifyPluginAsync<WebOptions> = async (fastify, { siteUrl, sudoMinutes, fileLimits }) => {
  // Derived from the server key, so signed cookies (and sessions) survive a restart.
  const secret = createHmac('sha256', fastify.serverKey).update('service-desk web cookies').digest()
  await fastify.register(
    async (web) => {
      await web.register(views)
      await web.register(sessions, {
        secret,
        secure: siteUrl.startsWith('https:'),
        cookiePath: (permalink) => new URL(fastify.urls.siteWeb(permalink)).pathname,
      })
      web.addHook('preHandler', secondFactorFirst)
      web.addHook('preHandler', accountWideOwnSession)
      web.setErrorHandler(async (error: FastifyError, request, reply) => {
        // A locked or full database file: the page's change did not happen; say so, and when to retry.
        const unavailable = answerUnavailable(error, request, reply)
        if (unavailable) {
          // Before the site could be read there is no site to draw the page in: the message alone.
          if (!request.web) return reply.type('text/plain; charset=utf-8').header('cache-control', 'no-store').send(`${unavailable.body.message}\n`)
          return reply.page('error', pageData(request, reply, { title: 'Please try again', message: unavailable.body.message }), 503)
        }
        // A U+0000 that got past the forms' checks: PostgreSQL refused the text; the visitor's mistake.
        const unstorable = refusedUnstorableText(error, request)
        const status = unstorable ? 400 : (error.statusCode ?? 500)
        if (status >= 500) request.log.error({ err: error }, 'page failed')
        const [title, message] =
          error.code === 'FST_CSRF_INVALID_TOKEN' || error.code === 'FST_CSRF_MISSING_SECRET'
            ? ['This form has expired', 'For your safety the form could not be accepted. Go back, reload the page and try again.']
            : unstorable
              ? ['That did not work', 'Text in the form holds the character U+0000 (NUL), which cannot be saved. Go back, remove it and try again.']
              : status === 413 && error.code === 'too_large'
                ? ['That was too large', `${error.message} Go back and choose fewer or smaller files.`]
                : status >= 500
                  ? ['Something went wrong', 'Something went wrong on our side. Please try again.']
                  : ['That did not work', 'The request could not be understood. Please go back and try again.']
        return reply.page('error', pageData(request, reply, { title, message }), status >= 500 ? 500 : status)
      })
      await web.register(signInRoutes)
      await web.register(companySignInRoutes)
      await web.register(forgottenPasswordRoutes)
      // Before the pages whose actions ask for it: it decorates the scope with how long it lasts.
      await web.register(fp(confirmRoutes), { sudoMinutes })
      await web.register(apiTokenRoutes)
      await web.register(profileRoutes)
      await web.register(secondFactorRoutes)
      await web.register(oauthRoutes)
      await web.register(securityLogRoutes)
      await web.register(administrationRoutes)
      await web.register(adminMailRoutes)
      await web.register(adminSignInRoutes)
      await web.register(adminPrivacyRoutes)
      await web.register(adminTeamRoutes)
      await web.register(adminCategoryRoutes)
      await web.register(adminFieldRoutes)
      await web.register(adminRecordRoutes)
      await web.register(adminHoursRoutes)
      await web.register(adminSlaRoutes)
      await web.register(adminRuleRoutes)
      await web.register(adminWebhookRoutes)
      await web.register(adminQueueRoutes)
      await web.register(queueRoutes)
      await web.register(reportPageRoutes)
      await web.register(searchRoutes)
      await web.register(discussionRoutes, { fileLimits })
      await web.register(liveRoutes)
      await web.register(customerRoutes, { fileLimits })
      await web.register(customerExportRoutes)
      await web.register(ratingRoutes)
    },
    { prefix: webPrefix(siteUrl) },
  )
}

export default webPages
