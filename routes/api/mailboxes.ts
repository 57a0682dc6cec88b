import type { FastifyInstance } from 'fastify'
import { actorOf } from '../actor.ts'
import type { Actor } from '../../db/stores/audit.ts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static, type TSchema } from 'typebox'
import { StoreError } from '../../db/stores/errors.ts'
import type { Mailbox } from '../../db/stores/mail.ts'
import { parseImapUrl, shownImap, shownSmtp } from '../../lib/mail.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { administratorsOnly } from './administrators-only.ts'

// The site's mailboxes through the API (docs/decisions.md, "Mail"), for its administrators as
// `service-desk mailbox` is for the operator: the addresses the site takes mail at, how their mail
// arrives and leaves, and how it is arriving. Passwords go in, never out.

const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description })

export const MailboxResource = Type.Object({
  address: Type.String({ description: 'Mail to it opens discussions of the site; answers to them join theirs.' }),
  category_id: Nullable(Type.Integer(), "The category its mail opens discussions in; null: the site's first."),
  imap: Nullable(Type.String(), 'The IMAP mailbox its mail is fetched from, without its password; null: the built-in receiver takes its mail.'),
  smtp: Nullable(Type.String(), "The SMTP address its replies leave by, without its password; null: the service's (SERVICE_SMTP_URL)."),
  acknowledge: Type.Boolean({ description: 'Whether a new discussion by mail is answered at once by an automatic acknowledgement.' }),
  state: Type.Object(
    {
      last_fetch_at: Nullable(Type.String({ format: 'date-time' }), 'When its IMAP mailbox was last read through; null: never (or no IMAP).'),
      last_error: Nullable(Type.String(), 'What went wrong at the last fetch, in words; null: nothing.'),
      passed_over: Nullable(Type.String(), 'The last message passed over and left unread in the IMAP mailbox (it cannot be read, names no sender, or is too large): when, its UID and why; null: none.'),
      taken_today: Type.Integer({ description: 'Messages taken in since midnight (UTC).' }),
      fetched_until: Nullable(Type.String({ format: 'date-time' }), 'Until when the process fetching its IMAP mailbox holds it (renewed at each look); a process that stopped without letting go holds it until then, unless it was on the machine of the next one to look. A time past: its holder stopped, and the next look takes it. Null: no process holds it.'),
    },
    { description: 'How its mail is arriving.' },
  ),
  oauth: Nullable(
    Type.Object({
      provider: Type.String({ description: 'The provider it signs in at, as the operator registered it (service-desk mail-provider list).' }),
      state: Type.Enum(['connected', 'refused'], { description: 'connected: it signs in with the provider\'s token; refused: the provider refused to renew it, and an administrator connects it again on the mail page.' }),
      problem: Nullable(Type.String(), 'Why the provider refused, in words; null while it is connected.'),
    }),
    'How it signs in when it was connected with OAuth (Microsoft 365, Google Workspace, another provider); null: with the passwords of its addresses, or not at all.',
  ),
  created_at: Type.String({ format: 'date-time' }),
  href: Type.String({ format: 'uri', description: 'DELETE stops taking mail at the address (and revokes a connected mailbox\'s token at its provider, where the provider offers it).' }),
})

export const MailboxListing = Type.Object({ mailboxes: Type.Array(MailboxResource) })

export const NewMailbox = Type.Object(
  {
    address: Type.String({ minLength: 3, maxLength: 254, description: 'The address, as mail is sent to it.' }),
    category_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "A category of the site; the site's first by default.", errorMessage: { type: 'must be a category id' } })),
    imap: Type.Optional(Type.String({ maxLength: 2000, description: 'An IMAP mailbox to fetch its mail from, `imaps://user:password@imap.example.com/INBOX` (user and password percent-encoded); without it, mail reaches the built-in receiver (SERVICE_MAIL_RECEIVER). The password is sealed and never shown again.' })),
    smtp: Type.Optional(Type.String({ maxLength: 2000, description: "An SMTP address its replies leave by, `smtp://user:password@smtp.example.com:587`; without it, the service's." })),
    acknowledge: Type.Optional(Type.Boolean({ description: 'Answer each new discussion by mail with an automatic acknowledgement (off by default).' })),
  },
)

const MailboxParams = Type.Object({ site: SiteParams.properties.site, address: Type.String({ maxLength: 254, description: 'The mailbox address.' }) })

/** The IMAP mailbox of a request, or a 400 saying what is wrong with it (never repeating it: it holds a password). */
function imapSettings(value: string) {
  const settings = parseImapUrl(value)
  if (typeof settings === 'string') throw new StoreError(settings, 'invalid', 'imap')
  return settings
}

/** A mailbox as the API shows it (and the administration page): addresses without passwords, its state. */
async function view(fastify: FastifyInstance, permalink: string, mailbox: Mailbox, takenToday: Map<number, number>): Promise<Static<typeof MailboxResource>> {
  const imap = await fastify.mailboxes.imapOf(mailbox)
  const smtp = await fastify.mailboxes.smtpOf(mailbox)
  return {
    address: mailbox.address,
    category_id: mailbox.categoryId,
    imap: imap && shownImap(imap),
    smtp: smtp && shownSmtp(smtp),
    acknowledge: mailbox.acknowledge,
    oauth: mailbox.oauthProvider === null ? null : { provider: mailbox.oauthProvider, state: mailbox.oauthProblem === null ? 'connected' : 'refused', problem: mailbox.oauthProblem },
    state: { last_fetch_at: mailbox.lastFetchAt && moment(mailbox.lastFetchAt), last_error: mailbox.lastError, passed_over: mailbox.passedOver, taken_today: takenToday.get(mailbox.id) ?? 0, fetched_until: mailbox.leaseUntil && moment(mailbox.leaseUntil) },
    created_at: moment(mailbox.createdAt),
    href: `${fastify.urls.site(permalink)}/mailboxes/${encodeURIComponent(mailbox.address)}`,
  }
}

/** The site's mailboxes as the API shows them, with the messages each took in since midnight (UTC). */
export async function describeMailboxes(fastify: FastifyInstance, site: { id: number; permalink: string }): Promise<Array<Static<typeof MailboxResource>>> {
  const list = await fastify.mailboxes.listMailboxes(site.id)
  const midnight = new Date(new Date(fastify.clock()).setUTCHours(0, 0, 0, 0))
  const taken = await fastify.mailboxes.takenSince(list.map((m) => m.id), midnight)
  return Promise.all(list.map((m) => view(fastify, site.permalink, m, taken)))
}

/** Adds a mailbox from what a request or a form says; the IMAP address checked here (its words never repeat it). */
export function addMailboxFrom(fastify: FastifyInstance, siteId: number, by: Actor, body: Static<typeof NewMailbox>): Promise<Mailbox> {
  const { address, category_id: categoryId = null, imap, smtp: smtpUrl = null, acknowledge } = body
  return fastify.mailboxes.addMailbox(siteId, address, { categoryId, imap: imap === undefined ? null : imapSettings(imap), smtpUrl, acknowledge }, by)
}

/**
 * Removes the site's mailbox of an address; whether there was one. A connected mailbox's refresh
 * token is revoked at its provider afterwards, in the background, where the provider offers it (a
 * provider slow to answer holds no page up; one that never answers leaves the token to end on its own).
 */
export async function removeMailboxOf(fastify: FastifyInstance, siteId: number, address: string, by: Actor): Promise<boolean> {
  const mailbox = await fastify.mailboxes.mailbox(address)
  if (mailbox?.siteId !== siteId || !(await fastify.mailboxes.removeMailbox(siteId, address, by))) return false
  // revoke never throws: it says in the log what became of the token.
  if (mailbox.oauthProvider !== null) void fastify.mailOAuth.revoke(mailbox)
  return true
}

const mailboxRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'its mailboxes', { strict: true })
  const tags = ['mail']

  fastify.get(
    '/:site/mailboxes',
    { schema: { tags, operationId: 'listMailboxes', summary: "The site's mailboxes: the addresses it takes mail at", params: SiteParams, response: { 200: MailboxListing, 400: InvalidRequestBody } } },
    async (request) => {
      const { site } = request.auth!
      return { mailboxes: await describeMailboxes(fastify, site) }
    },
  )

  fastify.post(
    '/:site/mailboxes',
    {
      schema: {
        tags,
        operationId: 'addMailbox',
        summary: 'Take the mail of an address: mail to it opens discussions of the site',
        description: 'Its mail arrives from an IMAP mailbox (`imap`), or at the built-in receiver (SERVICE_MAIL_RECEIVER) through an MX record or a forward. An address is one site’s only: another’s is a 409.',
        params: SiteParams,
        body: NewMailbox,
        response: { 201: MailboxResource, 400: InvalidRequestBody, 404: ErrorBody, 409: ErrorBody, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const mailbox = await addMailboxFrom(fastify, site.id, actorOf(request), request.body)
      const resource = await view(fastify, site.permalink, mailbox, new Map())
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )

  fastify.delete(
    '/:site/mailboxes/:address',
    {
      schema: {
        tags,
        operationId: 'removeMailbox',
        summary: 'Stop taking mail at an address; the discussions its mail made stay',
        params: MailboxParams,
        response: { 204: Type.Null(), 400: InvalidRequestBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      if (!(await removeMailboxOf(fastify, site.id, request.params.address, actorOf(request)))) {
        throw Object.assign(new Error(`This site has no mailbox ${request.params.address}.`), { statusCode: 404, code: 'not_found' })
      }
      return reply.code(204).send(null)
    },
  )
}

export default mailboxRoutes
