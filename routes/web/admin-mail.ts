import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { shownMoment } from '../../lib/clock.ts'
import { normalAddress } from '../../lib/mail.ts'
import { addMailboxFrom, describeMailboxes } from '../api/mailboxes.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, requireAdministrator } from './pages.ts'

// {site_url}/admin/mail: the site's mailboxes for its administrators (docs/decisions.md, "Mail"),
// as the API's /<site>/mailboxes shows them (routes/api/mailboxes.ts): how mail arrives and
// leaves, and how it is arriving (the last fetch, the last error in words, today's messages). An
// address is added or removed here; passwords go in and are never shown, not even in a form sent
// back with a mistake.

/** The longest category list the form offers (a site has a handful). */
const CATEGORIES_SHOWN = 200

const adminMailRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, mailboxes, categories } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/mail`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/mail')] }

  async function mailPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const site = request.web.site
    const { categories: choices } = await categories.list(site.id, 0, CATEGORIES_SHOWN)
    const rows = (await describeMailboxes(fastify, site)).map((m) => ({
      ...m,
      // A mailbox added before the site had a category has none: its mail goes to the first one made.
      category: choices.find((c) => c.id === m.category_id)?.name ?? "the site's first, once it has one",
      lastFetch: m.state.last_fetch_at ? shownMoment(new Date(m.state.last_fetch_at)) : m.imap ? 'not yet' : '—',
      plainText: m.imap?.startsWith('imap://') ?? false,
      fetchedUntil: m.state.fetched_until && shownMoment(new Date(m.state.fetched_until)),
    }))
    const held = await fastify.mailHeld()
    return reply.page('admin_mail', pageData(request, reply, { title: 'Mail', rows, held, categories: choices, values: { address: '', category: '', acknowledge: false }, notice: null, error: null, ...extra }), status)
  }

  fastify.get('/admin/mail', { preHandler: requireAdministrator }, async (request, reply) => {
    const { added, removed } = request.query as { added?: unknown; removed?: unknown }
    const notice = typeof added === 'string' ? `${added} is added. Mail to it opens discussions here.` : typeof removed === 'string' ? `${removed} is removed; the discussions its mail made stay.` : null
    return mailPage(request, reply, 200, { notice })
  })

  fastify.post('/admin/mail', action, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '')
    const category = text('category')
    const values = { address: text('address'), category, acknowledge: body.acknowledge === 'on' }
    try {
      if (category !== '' && !/^\d{1,10}$/.test(category)) throw new StoreError('choose a category of the site', 'invalid', 'category')
      const added = await addMailboxFrom(fastify, request.web.site.id, {
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

  fastify.post('/admin/mail/remove', action, async (request, reply) => {
    const address = typeof (request.body as { address?: unknown })?.address === 'string' ? (request.body as { address: string }).address : ''
    if (!(await mailboxes.removeMailbox(request.web.site.id, address))) return mailPage(request, reply, 404, { error: address ? `This site has no mailbox ${address}.` : 'Name the address to remove.' })
    return reply.redirect(`${base(request)}?removed=${encodeURIComponent(normalAddress(address))}`, 303)
  })
}

export default adminMailRoutes
