import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { shownMoment } from '../../lib/clock.ts'
import { ChoiceNeeded, type ExistingTokens } from '../../plugins/administration.ts'
import { actorOf } from '../actor.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { credentialKinds, filterFromParams, MAX_REASON, sortColumns, type InventoryEntry, type InventoryFilter } from '../../db/stores/inventory-rules.ts'
import { MAX_TOKEN_DAYS, POLICY_NAMES, policyOf, type SitePolicy } from '../../db/stores/site-policy.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, queryString, requireAdministrator } from './pages.ts'

// {site_url}/admin/...: the administration pages of a site (docs/decisions.md, "Site
// administrators"): the credentials inventory, with revocation, and the token policy, with its dry
// run. Administrators only (requireAdministrator); every action goes through the one
// administration plugin the API and the command line use too.

const when = (date: Date | null) => (date ? shownMoment(date) : '—')

const KIND_NAMES: Record<InventoryEntry['kind'], string> = { personal_token: 'Personal token', oauth: 'Application', legacy_token: 'Legacy token' }
const COLUMN_NAMES: Record<(typeof sortColumns)[number], string> = {
  owner: 'Owner',
  kind: 'Kind',
  name: 'Name',
  access: 'Access',
  created: 'Created',
  last_used: 'Last used',
  expires: 'Expires',
  state: 'State',
}

/** The query string of a filter, with some parameters changed: the sort links and the pager keep the rest. */
function queryOf(filter: InventoryFilter, change: Record<string, string | number | undefined> = {}): string {
  const params: Record<string, string | number | undefined> = {
    owner: filter.owner,
    kind: filter.kind,
    access: filter.access,
    unused_days: filter.unusedDays,
    expires_within_days: filter.expiresWithinDays,
    sort: filter.sort,
    direction: filter.descending === undefined ? undefined : filter.descending ? 'desc' : 'asc',
    page: filter.page,
    ...change,
  }
  return queryString(params)
}

/** A form's on/off radio: true, false, or undefined for anything else. */
const onOff = (value: unknown) => (value === 'on' ? true : value === 'off' ? false : undefined)

/** The policy a form asks for; `problems` names each field that will not do. */
export function policyFromForm(body: Record<string, unknown>): { changes: Partial<SitePolicy>; problems: Record<string, string> } {
  const problems: Record<string, string> = {}
  const text = typeof body.max_token_days === 'string' ? body.max_token_days.trim() : ''
  const days = /^\d{1,3}$/.test(text) ? Number(text) : NaN
  if (!(days >= 1 && days <= MAX_TOKEN_DAYS)) problems.max_token_days = `Give a whole number of days from 1 to ${MAX_TOKEN_DAYS}.`
  const writeTokens = body.write_tokens === 'everyone' || body.write_tokens === 'administrators' ? body.write_tokens : undefined
  if (!writeTokens) problems.write_tokens = 'Choose who may create Read and write tokens.'
  const switches = { legacyTokenOn: onOff(body.legacy_token), multipassOn: onOff(body.multipass), passwordOn: onOff(body.password) }
  for (const [field, value] of Object.entries(switches)) if (value === undefined) problems[field] = 'Choose on or off.'
  // Left out (a form of an older page), the requirement stays as it is.
  const required = body.staff_second_factor
  const staffSecondFactor = required === 'required' ? true : required === 'optional' ? false : undefined
  if (required !== undefined && staffSecondFactor === undefined) problems.staffSecondFactor = 'Choose whether a second factor is required.'
  // The customer's pages, left out likewise by an older form.
  const customers = { visitorDiscussions: onOff(body.visitor_discussions), publicDiscussions: onOff(body.public_discussions), newDiscussionsToTeam: onOff(body.new_discussions_to_team), satisfactionOn: onOff(body.satisfaction) }
  for (const [field, value] of Object.entries(customers)) if (value === undefined && body[POLICY_NAMES[field as keyof SitePolicy]] !== undefined) problems[field] = 'Choose on or off.'
  return { changes: { tokenMaxDays: days, writeTokens, ...switches, staffSecondFactor, ...customers }, problems }
}

const administrationRoutes: FastifyPluginAsync = async (fastify) => {
  const { administration, urls } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin`
  const actor = actorOf
  // Every action of these pages: the form's CSRF token, an administrator of this site, and a recent
  // sign-in or confirmation (routes/web/confirm.ts), which brings them back to the action's page.
  const action = (page: string) => ({ preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', page)] })

  async function inventoryPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const filter = filterFromParams(request.query as Record<string, unknown>)
    const { total, page, pages, entries } = await administration.inventory(request.web.site, filter)
    const rows = entries.map((entry) => ({
      ...entry,
      kindName: KIND_NAMES[entry.kind],
      accessName: entry.access === 'write' ? 'Read and write' : 'Read only',
      created: when(entry.createdAt),
      lastUsed: entry.lastUsedAt ? `${when(entry.lastUsedAt)}${entry.lastUsedFrom ? ` from ${entry.lastUsedFrom}` : ''}` : 'never',
      expires: when(entry.expiresAt),
      live: entry.state === 'active' || entry.state === 'unusable',
    }))
    const sortLinks = sortColumns.map((column) => {
      const current = (filter.sort ?? 'created') === column
      const descending = current ? !(filter.descending ?? filter.sort === undefined) : false
      return {
        column,
        label: COLUMN_NAMES[column],
        href: `${base(request)}/credentials${queryOf(filter, { sort: column, direction: descending ? 'desc' : 'asc', page: undefined })}`,
        sorted: current ? ((filter.descending ?? filter.sort === undefined) ? 'descending' : 'ascending') : 'none',
      }
    })
    return reply.page(
      'admin_credentials',
      pageData(request, reply, {
        title: 'Credentials',
        filter,
        kinds: credentialKinds.map((kind) => ({ kind, name: KIND_NAMES[kind] })),
        rows,
        total,
        page,
        pages,
        sortLinks,
        previous: page > 1 ? `${base(request)}/credentials${queryOf(filter, { page: page - 1 })}` : null,
        next: page < pages ? `${base(request)}/credentials${queryOf(filter, { page: page + 1 })}` : null,
        returnTo: queryOf(filter),
        maxReason: MAX_REASON,
        notice: null,
        error: null,
        reason: '',
        ...extra,
      }),
      status,
    )
  }

  fastify.get('/admin', { preHandler: requireAdministrator }, async (request, reply) => reply.redirect(`${base(request)}/credentials`, 303))

  fastify.get('/admin/credentials', { preHandler: requireAdministrator }, async (request, reply) => {
    const revoked = (request.query as { revoked?: unknown }).revoked
    const count = typeof revoked === 'string' && /^\d{1,3}$/.test(revoked) ? Number(revoked) : 0
    return inventoryPage(request, reply, 200, { notice: count > 0 ? `${count} credential${count === 1 ? '' : 's'} revoked. Their owners were told why.` : null })
  })

  fastify.post('/admin/credentials/revoke', action('/admin/credentials'), async (request, reply) => {
    const body = (request.body ?? {}) as { ids?: unknown; reason?: unknown }
    const ids = (Array.isArray(body.ids) ? body.ids : body.ids === undefined ? [] : [body.ids]).filter((id): id is string => typeof id === 'string')
    const reason = typeof body.reason === 'string' ? body.reason : ''
    try {
      const revoked = await administration.revoke(request.web.site, ids, reason, actor(request))
      const back = new URLSearchParams(String(request.url.split('?')[1] ?? ''))
      back.set('revoked', String(revoked.length))
      return reply.redirect(`${base(request)}/credentials?${back.toString()}`, 303)
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return inventoryPage(request, reply, error.code === 'not_found' ? 404 : error.code === 'conflict' ? 409 : 400, {
        error: sentence(error.message),
        reason,
      })
    }
  })

  async function policyPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const policy = policyOf(request.web.site)
    return reply.page(
      'admin_policy',
      pageData(request, reply, {
        title: 'Token policy',
        maxDays: MAX_TOKEN_DAYS,
        values: {
          max_token_days: String(policy.tokenMaxDays),
          write_tokens: policy.writeTokens,
          legacy_token: policy.legacyTokenOn ? 'on' : 'off',
          multipass: policy.multipassOn ? 'on' : 'off',
          password: policy.passwordOn ? 'on' : 'off',
          staff_second_factor: policy.staffSecondFactor ? 'required' : 'optional',
          visitor_discussions: policy.visitorDiscussions ? 'on' : 'off',
          public_discussions: policy.publicDiscussions ? 'on' : 'off',
          new_discussions_to_team: policy.newDiscussionsToTeam ? 'on' : 'off',
          satisfaction: policy.satisfactionOn ? 'on' : 'off',
        },
        problems: {},
        dryRun: null,
        notice: null,
        ...extra,
      }),
      status,
    )
  }

  fastify.get('/admin/policy', { preHandler: requireAdministrator }, async (request, reply) => {
    const query = request.query as { saved?: unknown; shortened?: unknown }
    const shortened = typeof query.shortened === 'string' && /^\d{1,6}$/.test(query.shortened) ? Number(query.shortened) : 0
    const notice = query.saved === '1' ? `The policy is saved.${shortened > 0 ? ` ${shortened} token${shortened === 1 ? ' was' : 's were'} shortened; their owners were told.` : ''}` : null
    return policyPage(request, reply, 200, { notice })
  })

  fastify.post('/admin/policy', action('/admin/policy'), async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const values = Object.fromEntries(['max_token_days', 'write_tokens', 'legacy_token', 'multipass', 'password', 'staff_second_factor', 'visitor_discussions', 'public_discussions', 'new_discussions_to_team', 'satisfaction'].map((name) => [name, typeof body[name] === 'string' ? body[name] : '']))
    const { changes, problems } = policyFromForm(body)
    if (Object.keys(problems).length > 0) return policyPage(request, reply, 400, { values, problems })
    const existing: ExistingTokens | undefined = body.existing === 'shorten' || body.existing === 'leave' ? body.existing : undefined
    try {
      const { shortened } = await administration.setPolicy(request.web.site, changes, existing, actor(request))
      return reply.redirect(`${base(request)}/policy?saved=1${shortened > 0 ? `&shortened=${shortened}` : ''}`, 303)
    } catch (error) {
      // The dry run: nothing is saved until the administrator says what happens to those tokens.
      if (error instanceof ChoiceNeeded) return policyPage(request, reply, 200, { values, dryRun: { days: error.days, tokens: error.tokens, people: error.people } })
      throw error
    }
  })
}

export default administrationRoutes
