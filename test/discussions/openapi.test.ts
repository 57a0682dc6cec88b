import { Validator } from '@seriousme/openapi-schema-validator'
import t, { type Test } from 'tap'
import { webhookEvents } from '../../db/values.ts'
import { withOperationDetails } from '../../routes/openapi.ts'
import { BASE_URL, newTestApp, supporterWithToken } from '../fixtures/app.ts'

// Engines: one: what the service says of itself (documents, versions, a generated client) is the same on either engine.
// Every v1 operation of docs/decisions.md ("Discussions (v1 shape)") and of the site resource; every
// GET also answers HEAD.
const READS = [
  '/{site}',
  '/{site}/personal_tokens/self',
  '/{site}/discussions',
  ...['new', 'open', 'resolved', 'deleted', 'spam', 'merged'].map((state) => `/{site}/discussions/${state}`),
  '/{site}/discussions/{number}',
  '/{site}/discussions/{number}/comments',
  '/{site}/discussions/{number}/comments/{comment}',
  '/{site}/discussions/{number}/participants',
  '/{site}/categories',
  '/{site}/categories/{id}',
  '/{site}/categories/{id}/discussions',
  '/{site}/credentials',
  '/{site}/policy',
  '/{site}/attachments/{id}',
  '/{site}/mailboxes',
  '/{site}/staff',
  '/{site}/webhooks',
  '/{site}/webhooks/{id}',
  '/{site}/webhooks/{id}/deliveries',
  '/{site}/saved_replies',
  '/{site}/fields',
  '/{site}/fields/{id}',
  '/{site}/customers',
  '/{site}/customers/{id}',
  '/{site}/privacy',
  '/{site}/customers/{id}/erasure',
  '/{site}/sign_in_providers',
  '/{site}/sign_in_providers/{id}',
  '/{site}/saved_replies/{id}',
  '/{site}/macros',
  '/{site}/macros/{id}',
  '/{site}/rules',
  '/{site}/rules/{id}',
  '/{site}/discussions/{number}/rule_firings',
  '/{site}/sender_rules',
  '/{site}/search',
  '/{site}/changes',
  '/{site}/audit_log',
  '/{site}/schedules',
  '/{site}/schedules/{id}',
  '/{site}/sla_policies',
  '/{site}/sla_policies/{id}',
  '/{site}/reports',
  '/{site}/reports/{name}',
]
const WRITES = [
  'post /{site}/categories/{id}/discussions',
  'post /{site}/discussions/{number}/comments',
  'put /{site}/discussions/{number}',
  'delete /{site}/discussions/{number}',
  'post /{site}/discussions/{number}/participants',
  'delete /{site}/discussions/{number}/participants/{email}',
  ...['resolve', 'unresolve', 'toggle', 'restore', 'spam', 'not_spam', 'change_category', 'assign', 'merge', 'unmerge', 'split'].map((action) => `post /{site}/discussions/{number}/${action}`),
  'post /{site}/fields',
  'patch /{site}/fields/{id}',
  'delete /{site}/fields/{id}',
  'put /{site}/customers/{id}',
  'post /{site}/customers/{id}/export',
  'post /{site}/customers/{id}/erase',
  'put /{site}/privacy',
  'post /{site}/sign_in_providers',
  'patch /{site}/sign_in_providers/{id}',
  'delete /{site}/sign_in_providers/{id}',
  'patch /{site}/categories/{id}',
  'post /{site}/categories',
  'delete /{site}/categories/{id}',
  'post /{site}/schedules',
  'patch /{site}/schedules/{id}',
  'delete /{site}/schedules/{id}',
  'post /{site}/sla_policies',
  'patch /{site}/sla_policies/{id}',
  'delete /{site}/sla_policies/{id}',
  'post /{site}/saved_replies',
  'patch /{site}/saved_replies/{id}',
  'delete /{site}/saved_replies/{id}',
  'post /{site}/macros',
  'patch /{site}/macros/{id}',
  'delete /{site}/macros/{id}',
  'post /{site}/discussions/{number}/apply_macro',
  'post /{site}/rules',
  'post /{site}/rules/dry_run',
  'patch /{site}/rules/{id}',
  'delete /{site}/rules/{id}',
  'post /{site}/sender_rules',
  'delete /{site}/sender_rules/{id}',
  'post /{site}/credentials/revoke',
  'patch /{site}/policy',
  'post /{site}/uploads',
  'post /{site}/mailboxes',
  'delete /{site}/mailboxes/{address}',
  'patch /{site}/staff/{id}',
  'delete /{site}/staff/{id}',
  'post /{site}/invitations',
  'post /{site}/invitations/{id}/resend',
  'delete /{site}/invitations/{id}',
  'post /{site}/webhooks',
  'patch /{site}/webhooks/{id}',
  'delete /{site}/webhooks/{id}',
  'post /{site}/webhooks/{id}/rotate',
  'post /{site}/webhooks/{id}/test',
  'post /{site}/webhooks/{id}/deliveries/{delivery}/redeliver',
]
const EXPECTED = [...READS.flatMap((path) => [`get ${path}`, `head ${path}`]), ...WRITES]

type Operation = { responses: Record<string, { content?: Record<string, unknown> }>; parameters?: Array<{ name: string; in: string }> }

async function documentAndRoutes(t: Test) {
  const { app } = await newTestApp(t)
  const routes: Array<{ method: string; url: string }> = []
  app.addHook('onRoute', (route) => {
    // The queue's pages share the API's addresses for browsers (routes/web/queue.ts): not API routes.
    if ((route.constraints as { page?: string } | undefined)?.page === 'html') return
    for (const method of [route.method].flat()) routes.push({ method: method.toLowerCase(), url: route.url })
  })
  await app.ready()
  const res = await app.inject({ url: '/openapi.json' })
  return { app, res, routes }
}

t.test('GET /openapi.json: an OpenAPI 3.1 document, served without a credential', async (t) => {
  const { res } = await documentAndRoutes(t)
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  t.same(doc.servers, [{ url: BASE_URL }], 'the configured base URL')
  const result = await new Validator().validate(doc)
  t.same(result.errors, undefined)
  t.equal(result.valid, true, 'valid against the OpenAPI 3.1 schema')
  t.notOk(res.body.includes('errorMessage'), 'no validator annotations leak into the document')
})

t.test('every API route is in the document, and nothing else', async (t) => {
  const { res, routes } = await documentAndRoutes(t)
  const doc = res.json()
  const documented = Object.entries(doc.paths as Record<string, object>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`))
  t.same([...documented].sort(), [...EXPECTED].sort())

  // Any discussion or category route registered in the app, now or later, must be documented.
  const toPath = (url: string) => url.replace(/:(\w+)/g, '{$1}')
  const apiShaped = routes.filter((r) => /^\/:site\/(discussions|categories|personal_tokens|credentials|policy|uploads|attachments|mailboxes|staff|invitations|webhooks|saved_replies|fields|customers|privacy|sign_in_providers|macros|rules|sender_rules|search|changes|audit_log|schedules|sla_policies|reports)/.test(r.url))
  t.equal(apiShaped.length, EXPECTED.length - 2, 'all but the site resource')
  for (const r of apiShaped) t.ok(documented.includes(`${r.method} ${toPath(r.url)}`), `${r.method} ${r.url} is documented`)
  t.notOk(Object.keys(doc.paths).some((p) => p.includes('*') || p.includes('openapi') || p.includes('well-known')))
})

t.test('security schemes of the contract, and the answers of every operation', async (t) => {
  const { app, res } = await documentAndRoutes(t)
  const doc = res.json()
  t.match(doc.components.securitySchemes, {
    personalToken: { type: 'http', scheme: 'bearer', description: /service_pat_/ },
    legacyToken: { type: 'apiKey', in: 'header', name: 'X-Service-Auth' },
    multipass: { type: 'apiKey', in: 'header', name: 'X-Multipass', description: /Deprecated/ },
    password: { type: 'http', scheme: 'basic' },
  })
  t.same(doc.security, [{ personalToken: [] }, { oauth2: [] }, { legacyToken: [] }, { multipass: [] }, { password: [] }])
  t.same(doc.components.securitySchemes.oauth2.flows, {
    authorizationCode: {
      authorizationUrl: `${BASE_URL}/oauth/authorize`,
      tokenUrl: `${BASE_URL}/oauth/token`,
      refreshUrl: `${BASE_URL}/oauth/token`,
      scopes: { read: 'Read the API of the site: GET and HEAD.', write: 'Change it as well: POST, PUT, PATCH and DELETE.' },
    },
  })
  // The very endpoints and scopes the authorization server announces (RFC 8414), not a copy of them.
  const meta = (await app.inject({ url: '/.well-known/oauth-authorization-server' })).json()
  const { authorizationUrl, tokenUrl } = doc.components.securitySchemes.oauth2.flows.authorizationCode
  t.same([authorizationUrl, tokenUrl], [meta.authorization_endpoint, meta.token_endpoint], 'the OAuth metadata agrees')
  t.match(meta.scopes_supported, ['read', 'write'])

  const operations = Object.values(doc.paths as Record<string, Record<string, Operation>>).flatMap((ops) => Object.values(ops))
  for (const op of operations) {
    for (const status of ['400', '401', '403', '406']) t.ok(op.responses[status]?.content?.['text/plain'], `${status} is documented as text`)
  }
  // The authentication's 400 (a credential sent wrongly) beside a route's own JSON 400, or alone.
  t.same(Object.keys(doc.paths['/{site}/discussions'].get.responses['400'].content), ['application/vnd.service-v1+json', 'application/json', 'text/plain'])
  t.match(doc.paths['/{site}/discussions'].get.responses['400'].description, /fields.*invalid_request/)
  t.same(Object.keys(doc.paths['/{site}'].get.responses['400'].content), ['text/plain'])
  t.match(doc.paths['/{site}'].get.responses['400'].description, /^Refused before the route: .*invalid_request/)
  const create = doc.paths['/{site}/categories/{id}/discussions'].post
  t.same(Object.keys(create.responses).sort(), ['201', '400', '401', '403', '404', '406', '409', '413', '415', '422', '429', '503'])
  t.ok(doc.paths['/{site}/discussions/{number}'].put.responses['409'], 'a change can meet a deleted discussion')
  t.same(create.responses['201'].content['application/vnd.service-v1+json'].schema, { $ref: '#/components/schemas/DiscussionWithComments' }, 'the v1 media type')
  t.same(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewDiscussion' })
  t.same(doc.components.schemas.NewDiscussion.required, ['title', 'body'])
  // A post takes its files in a form as well; the uploads take nothing else.
  t.same(create.requestBody.content['multipart/form-data'].schema, { allOf: [{ $ref: '#/components/schemas/NewDiscussion' }, { $ref: '#/components/schemas/FilesOfAPost' }] })
  t.same(doc.paths['/{site}/uploads'].post.requestBody.content, { 'multipart/form-data': { schema: { $ref: '#/components/schemas/UploadForm' } } })
  t.same(doc.components.schemas.UploadForm.properties.file.items, { type: 'string', format: 'binary' })
  t.same(doc.components.schemas.Comment.properties.attachments.items, { $ref: '#/components/schemas/Attachment' })
  const listing = doc.paths['/{site}/discussions'].get
  t.same(
    listing.parameters.filter((p: { in: string }) => p.in === 'query').map((p: { name: string }) => p.name),
    ['page', 'cursor', 'sort', 'public', 'since', 'user_id', 'user_email', 'assignee', 'tag', 'sla'],
  )
})

t.test('for generators: operation names, named shapes, declared headers, the license and the scopes', async (t) => {
  const { res } = await documentAndRoutes(t)
  const doc = res.json()
  const operations = Object.entries(doc.paths as Record<string, Record<string, Operation & { operationId: string; security: object[] }>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ method, path, op })),
  )
  const ids = operations.map(({ op }) => op.operationId)
  t.ok(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id)), 'every operation has an identifier')
  t.equal(new Set(ids).size, ids.length, 'unique')
  const idOf = (method: string, path: string) => doc.paths[path][method].operationId
  t.same(
    [idOf('get', '/{site}/discussions'), idOf('head', '/{site}/discussions'), idOf('post', '/{site}/categories/{id}/discussions'), idOf('post', '/{site}/discussions/{number}/resolve'), idOf('get', '/{site}/personal_tokens/self')],
    ['listDiscussions', 'listDiscussionsHead', 'createDiscussion', 'resolveDiscussion', 'getCurrentPersonalToken'],
  )
  for (const name of ['Site', 'Discussion', 'DiscussionListing', 'Comment', 'Category', 'Error', 'ValidationError', 'PersonalToken']) t.ok(doc.components.schemas[name], `${name} is named`)
  t.same(doc.components.schemas.DiscussionListing.properties.discussions.items, { $ref: '#/components/schemas/Discussion' }, 'named shapes refer to each other')
  t.notMatch(JSON.stringify(doc.paths), '"properties"', 'no shape is written out in the paths: each is referred to by name')
  // The webhooks (OpenAPI 3.1): one POST per event, its data the resource the API returns.
  t.same(Object.keys(doc.webhooks).sort(), [...webhookEvents, 'webhook.test'].sort())
  t.match(doc.webhooks['comment.created'].post, {
    operationId: 'commentCreatedEvent',
    parameters: [{ name: 'webhook-id', in: 'header', required: true }, { name: 'webhook-timestamp' }, { name: 'webhook-signature' }],
    requestBody: { content: { 'application/json': { schema: { required: ['type', 'timestamp', 'data'], properties: { type: { const: 'comment.created' }, data: { $ref: '#/components/schemas/Comment' } } } } } },
  })
  t.same(doc.webhooks['discussion.created'].post.requestBody.content['application/json'].schema.properties.data, { $ref: '#/components/schemas/DiscussionWithComments' })
  for (const { method, path, op } of operations) {
    const answer = op.responses['200'] ?? op.responses['201'] ?? op.responses['202']
    // A download answers with the file itself; its refusals are JSON (below).
    if (path === '/{site}/attachments/{id}') {
      t.same(op.responses['200'].content, { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } })
      t.same(Object.keys(op.responses['404'].content!), ['application/json'])
    } else if (answer) {
      const media = Object.values(answer.content!)
      t.equal(media.length, 2, `${method} ${path}: both media types`)
      t.equal(new Set(media.map((m) => JSON.stringify(m))).size, 1, `${method} ${path}: one schema`)
    } else {
      t.same(Object.keys(op.responses).filter((status) => status.startsWith('2')), ['204'], `${method} ${path}: no content`)
    }
    const scope = method === 'get' || method === 'head' ? 'read' : 'write'
    t.same(op.security.find((s) => 'oauth2' in s), { oauth2: [scope] }, `${method} ${path} needs ${scope}`)
  }
  const list = doc.paths['/{site}/discussions'].get.responses
  // Every answer after authentication carries the rate limit's headers (plugins/rate-limits.ts); a 406 comes before it.
  const RL = ['RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Used', 'X-RateLimit-Reset', 'X-RateLimit-Resource']
  t.same(Object.keys(list['200'].headers), ['Service-Token-Expiration', 'Deprecation', 'Link', 'ETag', ...RL])
  t.notOk(Object.keys(list['406'].headers).includes('RateLimit'), 'a 406 is not counted')
  // Conditional requests: every read takes If-None-Match and may answer 304; a change to a discussion takes If-Match and may answer 412.
  t.same(Object.keys(list['304'].headers), ['ETag', 'Service-Token-Expiration', ...RL])
  const header = (op: { parameters?: Array<{ name: string; in: string }> }, name: string) => op.parameters?.some((p) => p.in === 'header' && p.name === name)
  for (const { method, path, op } of operations) {
    const reads = method === 'get' || method === 'head'
    t.equal(header(op, 'If-None-Match'), reads, `${method} ${path}: If-None-Match on reads only`)
    t.equal('304' in op.responses, reads)
    const changes = !reads && path.startsWith('/{site}/discussions/{number}')
    t.equal(header(op, 'If-Match') ?? false, changes, `${method} ${path}: If-Match on the changes to a discussion`)
    t.equal('412' in op.responses, changes)
  }
  t.same(doc.paths['/{site}/discussions/{number}'].put.responses['412'].content['application/json'].schema, { $ref: '#/components/schemas/Error' })
  t.same(Object.keys(list['401'].headers), ['WWW-Authenticate', ...RL])
  t.same(Object.keys(list['403'].headers), ['WWW-Authenticate', 'Service-Token-Expiration', ...RL], 'a 403 to a genuine token says when it expires')
  t.same(Object.keys(list['429'].headers), ['Retry-After', ...RL])
  t.same(Object.keys(list['429'].content), ['application/json', 'text/plain'], 'past a rate limit JSON, past the failure budget text')
  t.same(list['429'].content['application/json'].schema, { $ref: '#/components/schemas/Error' })
  t.same(Object.keys(list['503'].headers), ['Retry-After', ...RL])
  t.same(Object.keys(list['400'].headers), ['WWW-Authenticate', 'Service-Token-Expiration', ...RL])
  t.same(Object.keys(doc.paths['/{site}/discussions/{number}'].get.responses['404'].headers), ['Service-Token-Expiration', ...RL])
  t.same(list['401'].headers['WWW-Authenticate'], { $ref: '#/components/headers/WWW-Authenticate' })
  t.match(doc.components.headers['Retry-After'], { schema: { type: 'integer' } })
  t.match(doc.components.headers['X-RateLimit-Reset'], { schema: { type: 'integer' } })
  t.same(doc.info.license, { name: 'MIT', identifier: 'MIT' })
  t.ok(doc.tags.some((tag: { name: string }) => tag.name === 'tokens'), 'every tag used is described')
})

t.test('the site resource links to the document and to everything else', async (t) => {
  const { app } = await documentAndRoutes(t)
  const ann = await supporterWithToken(app)
  const site = (await app.inject({ url: '/demo', headers: ann.bearer })).json()
  t.same(site, {
    name: 'Site demo',
    permalink: 'demo',
    href: `${BASE_URL}/demo`,
    html_href: 'https://help.example.test/demo/',
    discussions_href: `${BASE_URL}/demo/discussions`,
    new_discussions_href: `${BASE_URL}/demo/discussions/new`,
    open_discussions_href: `${BASE_URL}/demo/discussions/open`,
    resolved_discussions_href: `${BASE_URL}/demo/discussions/resolved`,
    deleted_discussions_href: `${BASE_URL}/demo/discussions/deleted`,
    spam_discussions_href: `${BASE_URL}/demo/discussions/spam`,
    categories_href: `${BASE_URL}/demo/categories`,
    api_tokens_url: 'https://help.example.test/demo/profile/api_tokens',
    api_documentation_href: `${BASE_URL}/openapi.json`,
  })
  for (const [name, href] of Object.entries(site as Record<string, string>)) {
    if (!name.endsWith('_href') || !href.startsWith(BASE_URL)) continue
    const res = await app.inject({ url: href.slice(BASE_URL.length), headers: ann.bearer })
    t.equal(res.statusCode, 200, `${name} leads somewhere`)
  }
})

t.test('the conditional headers are added to an operation that has no parameters of its own too', async (t) => {
  const doc = withOperationDetails({
    paths: {
      '/ping': { get: { responses: { 200: { description: 'ok' } } } },
      '/{site}/discussions/{number}/resolve': { post: { responses: { 200: { description: 'ok' } } } },
      '/{site}/webhooks': { post: { responses: { 201: { description: 'made' } } } },
    },
  })
  t.same(doc.paths['/{site}/webhooks'].post.parameters!.map((p) => (p as { name: string }).name), ['Idempotency-Key'], 'a POST that changes no discussion: the key alone')
  t.same(doc.paths['/ping'].get.parameters!.map((p) => (p as { name: string }).name), ['If-None-Match'])
  t.same(doc.paths['/{site}/discussions/{number}/resolve'].post.parameters!.map((p) => (p as { name: string }).name), ['If-Match', 'Idempotency-Key'])
})

t.test('every POST but an upload takes an Idempotency-Key, with its 409 and 422; nothing else does', async (t) => {
  const { res } = await documentAndRoutes(t)
  const doc = res.json()
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const takes = (op.parameters ?? []).some((p) => p.in === 'header' && p.name === 'Idempotency-Key')
      const expected = method === 'post' && path !== '/{site}/uploads'
      t.equal(takes, expected, `${method} ${path}`)
      if (expected) t.ok(op.responses['422'] && op.responses['409'], `${method} ${path}: its 409 and 422`)
    }
  }
  t.same(doc.components.schemas.ChangeFeed.properties.changes.items, { $ref: '#/components/schemas/Change' })
  t.same(doc.components.schemas.Change.properties.discussion, { $ref: '#/components/schemas/Discussion' })
})
