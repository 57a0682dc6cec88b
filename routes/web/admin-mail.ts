import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { actorOf } from '../actor.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { shownMoment } from '../../lib/clock.ts'
import { isMailAddress, normalAddress } from '../../lib/mail.ts'
import type { PendingSignIn } from '../../lib/mail-oauth.ts'
import { addMailboxFrom, describeMailboxes, removeMailboxOf } from '../api/mailboxes.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { SECURITY_HEADERS } from '../../plugins/views.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, requireAdministrator, sealedOnceCookie } from './pages.ts'

// {site_url}/admin/mail: the site's mailboxes for its administrators (docs/decisions.md, "Mail"),
// as the API's /<site>/mailboxes shows them (routes/api/mailboxes.ts): how mail arrives and
// leaves, and how it is arriving (the last fetch, the last error in words, today's messages). An
// address is added or removed here; passwords go in and are never shown, not even in a form sent
// back with a mistake.
//
// A mailbox at Microsoft 365, Google Workspace or another provider the operator registered is
// connected with OAuth (docs/decisions.md, "Mailboxes connected with OAuth"): "Connect" sends the
// administrator to sign in at the provider (authorization code, PKCE, state and nonce, kept in a
// sealed cookie of this browser for ten minutes, bound to the site and the administrator), and the
// provider sends them back to /admin/mail/connected, where the mailbox is made, or connected again,
// with the address the provider signed them in as.

/** The longest category list the form offers (a site has a handful). */
const CATEGORIES_SHOWN = 200

/** The cookie that keeps a sign-in at a provider under way, and how long it lasts. */
const CONNECT_COOKIE = 'mail_connect'
const CONNECT_MS = 10 * 60_000

/** A sign-in at a provider under way, as its sealed cookie holds it. */
interface Connecting extends PendingSignIn {
  site: number
  user: number
  provider: string
  /** A shared mailbox the account signing in may read and send as; null: the account's own. */
  shared: string | null
  category: number | null
  acknowledge: boolean
  until: number
}

const adminMailRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, mailboxes, categories } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/mail`
  /** Where a provider sends the administrator back: the redirect address registered with the application. */
  const callback = (request: FastifyRequest) => `${base(request)}/connected`
  const connectCookie = sealedOnceCookie<Connecting>(CONNECT_COOKIE, base)
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/mail')] }

  async function mailPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const site = request.web.site
    const { categories: choices } = await categories.list(site.id, 0, CATEGORIES_SHOWN)
    const registered = await mailboxes.providers()
    const providers = registered.map((p) => ({ name: p.name, label: p.label }))
    const rows = (await describeMailboxes(fastify, site)).map((m) => ({
      ...m,
      // A mailbox added before the site had a category has none: its mail goes to the first one made.
      category: choices.find((c) => c.id === m.category_id)?.name ?? "the site's first, once it has one",
      lastFetch: m.state.last_fetch_at ? shownMoment(new Date(m.state.last_fetch_at)) : m.imap ? 'not yet' : '—',
      plainText: m.imap?.startsWith('imap://') ?? false,
      fetchedUntil: m.state.fetched_until && shownMoment(new Date(m.state.fetched_until)),
      providerLabel: m.oauth && (providers.find((p) => p.name === m.oauth!.provider)?.label ?? m.oauth.provider),
    }))
    const held = await fastify.mailHeld()
    // The Connect forms go to the provider's sign-in, by a redirect the page's CSP must allow.
    const settings = registered.flatMap((p) => (p.settings ? [p.settings] : []))
    const csp = SECURITY_HEADERS['content-security-policy'].replace("form-action 'self'", ["form-action 'self'", ...fastify.mailOAuth.protocol.signInOrigins(settings)].join(' '))
    const data = pageData(request, reply, { title: 'Mail', rows, held, providers, redirectAddress: callback(request), categories: choices, values: { address: '', category: '', acknowledge: false }, notice: null, error: null, ...extra })
    return reply.page('admin_mail', data, status, { 'content-security-policy': csp })
  }

  fastify.get('/admin/mail', { preHandler: requireAdministrator }, async (request, reply) => {
    const { added, removed, connected } = request.query as { added?: unknown; removed?: unknown; connected?: unknown }
    const notice =
      typeof added === 'string'
        ? `${added} is added. Mail to it opens discussions here.`
        : typeof connected === 'string'
          ? `${connected} is connected: its mail is fetched, and replies leave by it, signed in with the provider's token.`
          : typeof removed === 'string'
            ? `${removed} is removed; the discussions its mail made stay.`
            : null
    return mailPage(request, reply, 200, { notice })
  })

  fastify.post('/admin/mail', action, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '')
    const category = text('category')
    const values = { address: text('address'), category, acknowledge: body.acknowledge === 'on' }
    try {
      if (category !== '' && !/^\d{1,10}$/.test(category)) throw new StoreError('choose a category of the site', 'invalid', 'category')
      const added = await addMailboxFrom(fastify, request.web.site.id, actorOf(request), {
        address: values.address,
        ...(category !== '' && { category_id: Number(category) }),
        ...(text('imap') !== '' && { imap: text('imap') }),
        ...(text('smtp') !== '' && { smtp: text('smtp') }),
        acknowledge: values.acknowledge,
      })
      return reply.redirect(`${base(request)}?added=${encodeURIComponent(added.address)}`, 303)
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      const status = error.code === 'conflict' ? 409 : error.code === 'not_found' ? 404 : 400
      // The IMAP and SMTP addresses are not sent back: they hold passwords.
      return mailPage(request, reply, status, { values, error: `${sentence(error.message)}${text('imap') || text('smtp') ? ' Type the IMAP and SMTP addresses again: they hold passwords, so this page does not keep them.' : ''}` })
    }
  })

  // Connect a mailbox (or connect it again): to the provider's sign-in, with what it needs kept in this browser.
  fastify.post('/admin/mail/connect', action, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '')
    const provider = await mailboxes.provider(text('provider'))
    if (!provider?.settings) return mailPage(request, reply, 400, { error: provider ? `The application registered at ${provider.label} is sealed under another server key: the operator registers it again.` : 'Choose a mail provider the operator registered.' })
    const category = text('category')
    if (category !== '' && !/^\d{1,10}$/.test(category)) return mailPage(request, reply, 400, { error: 'Choose a category of the site.' })
    if (text('shared') !== '' && !isMailAddress(text('shared').toLowerCase())) return mailPage(request, reply, 400, { error: `"${text('shared')}" is not a mail address: give the shared mailbox's address, or leave it empty.` })
    // Connecting again: the provider is asked to sign in as that mailbox.
    const hint = text('address')
    let started: Awaited<ReturnType<typeof fastify.mailOAuth.protocol.start>>
    try {
      started = await fastify.mailOAuth.protocol.start(provider.settings, callback(request), hint === '' ? undefined : hint)
    } catch (error) {
      request.log.warn({ err: { message: (error as Error).message }, provider: provider.name }, 'could not reach a mail provider to connect a mailbox')
      return mailPage(request, reply, 502, { error: `${provider.label} could not be reached (${(error as Error).message}). Try again in a while; if it lasts, the operator checks the provider's issuer address.` })
    }
    const shared = text('shared').toLowerCase()
    const connecting: Connecting = { ...started.pending, site: request.web.site.id, user: request.web.user!.id, provider: provider.name, shared: shared === '' ? null : shared, category: category === '' ? null : Number(category), acknowledge: body.acknowledge === 'on', until: fastify.clock() + CONNECT_MS }
    connectCookie.put(request, reply, connecting, CONNECT_MS)
    return reply.redirect(started.url, 303)
  })

  // The provider sends the administrator back here: the mailbox is connected with the address it signed them in as.
  fastify.get('/admin/mail/connected', { preHandler: requireAdministrator }, async (request, reply) => {
    // Once: a sign-in's answer is never taken twice.
    const connecting = connectCookie.take(request, reply)
    const again = 'Start again with Connect.'
    if (!connecting || connecting.site !== request.web.site.id || connecting.user !== request.web.user!.id) {
      return mailPage(request, reply, 400, { error: `This answer of a mail provider was not asked for by you in this browser. ${again}` })
    }
    if (connecting.until < fastify.clock()) return mailPage(request, reply, 400, { error: `The sign-in at the mail provider took longer than ${CONNECT_MS / 60_000} minutes. ${again}` })
    const provider = await mailboxes.provider(connecting.provider)
    if (!provider?.settings) return mailPage(request, reply, 400, { error: `The mail provider ${connecting.provider} is no longer registered.` })
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : ''
    const { error, error_description: description, state } = request.query as { error?: unknown; error_description?: unknown; state?: unknown }
    // An answer of another sign-in (or of none: a link anyone could make) is not shown as the provider's words.
    if (state !== connecting.state) return mailPage(request, reply, 400, { error: `This answer of a mail provider was not asked for by you in this browser. ${again}` })
    if (typeof error === 'string') {
      const words = typeof description === 'string' ? `: ${description.replace(/\s+/g, ' ').slice(0, 300)}` : ''
      return mailPage(request, reply, 400, { error: `${provider.label} did not connect the mailbox (${error.slice(0, 100)}${words}). ${again}` })
    }
    try {
      const { address, tokens } = await fastify.mailOAuth.protocol.finish(provider.settings, new URL(`${callback(request)}${query}`), connecting, fastify.clock())
      const connected = await mailboxes.connectMailbox(request.web.site.id, { provider: provider.name, address, shared: connecting.shared, settings: provider.settings, tokens, categoryId: connecting.category, acknowledge: connecting.acknowledge }, actorOf(request))
      request.log.info({ mailbox: { id: connected.id, address: connected.address }, provider: provider.name, again: connected.again }, 'a mailbox was connected with OAuth')
      return reply.redirect(`${base(request)}?connected=${encodeURIComponent(connected.address)}`, 303)
    } catch (failure) {
      if (failure instanceof StoreError) return mailPage(request, reply, failure.code === 'conflict' ? 409 : 400, { error: `${sentence(failure.message)}` })
      const { error: code, message } = failure as { error?: unknown; message?: string }
      request.log.warn({ err: { message, code }, provider: provider.name }, 'a mail provider\'s answer could not connect a mailbox')
      return mailPage(request, reply, 400, { error: `${provider.label}'s answer could not connect the mailbox (${message}). ${again}` })
    }
  })

  fastify.post('/admin/mail/remove', action, async (request, reply) => {
    const address = typeof (request.body as { address?: unknown })?.address === 'string' ? (request.body as { address: string }).address : ''
    if (!(await removeMailboxOf(fastify, request.web.site.id, address, actorOf(request)))) return mailPage(request, reply, 404, { error: address ? `This site has no mailbox ${address}.` : 'Name the address to remove.' })
    return reply.redirect(`${base(request)}?removed=${encodeURIComponent(normalAddress(address))}`, 303)
  })
}

export default adminMailRoutes
