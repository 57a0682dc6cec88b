import { randomBytes } from 'node:crypto'
import { shownMoment } from '../lib/clock.ts'
import type { AdapterPayload } from 'oidc-provider'
import { loadConfig } from '../config.ts'
import { StoreError } from '../db/stores/errors.ts'
import type { OAuthRow } from '../db/stores/oauth.ts'
import { holdsNul, NUL_PROBLEM } from '../lib/nul.ts'
import { recordAdapter } from '../plugins/oauth/adapter.ts'
import { shown } from '../lib/terminal-text.ts'
import { registrableRedirectUri } from '../plugins/oauth/settings.ts'
import { admin } from './admin.ts'
import { UsageError, type Command, type Io, type Values } from './command.ts'

// The OAuth applications an administrator registers for one site (plugins/oauth, docs/decisions.md,
// "OAuth for applications"): public clients bound to that site's API, written as the library's own
// `Client` records through its adapter, so the authorization server reads them back as it reads
// the ones that registered themselves (RFC 7591). None of this prints a token: a client id is public.

export const MAX_REDIRECT_URIS = 10
export const MAX_CLIENT_NAME = 100

/** What an administrator's application is: the library's client metadata, and the site it is bound to. */
export interface SiteClient {
  clientId: string
  name: string
  permalink: string
  redirectUris: string[]
  /** When it was registered, in milliseconds. */
  issuedAt: number
}

/** A new client id: `app_` and 22 characters of base64url, 128 random bits. */
export function newClientId(): string {
  return `app_${randomBytes(16).toString('base64url')}`
}

/**
 * The metadata of the `Client` record of an application registered for one site: a public client
 * (no secret, PKCE required by the provider) of the authorization code and refresh token grants,
 * whose `service_site` binds its access to {base_url}/<site> (plugins/oauth/provider.ts).
 */
export function siteClientMetadata(client: SiteClient): AdapterPayload {
  return {
    client_id: client.clientId,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    service_site: client.permalink,
    client_id_issued_at: Math.floor(client.issuedAt / 1000),
  }
}

/** The name as stored: trimmed, 1 to 100 characters, without U+0000. */
export function clientName(value: string): string {
  const name = value.trim()
  if (name === '' || name.length > MAX_CLIENT_NAME) throw new StoreError(`an application name must be 1 to ${MAX_CLIENT_NAME} characters`, 'invalid', 'name')
  if (holdsNul(name)) throw new StoreError(`an application name ${NUL_PROBLEM}`, 'invalid', 'name')
  return name
}

/** The redirect URIs as stored, in the order given, each once; each one https, or http on the loopback interface. */
export function redirectUris(values: string[]): string[] {
  if (values.length > MAX_REDIRECT_URIS) throw new StoreError(`an application has at most ${MAX_REDIRECT_URIS} redirect URIs, not ${values.length}`, 'limit', 'redirect_uri')
  for (const uri of values) {
    // Spaces and control characters are no part of a URI; the library compares the address as it is written.
    if (/[\s\u0000-\u001f\u007f-\u009f]/.test(uri) || !registrableRedirectUri(uri)) {
      throw new StoreError(
        `${shown(JSON.stringify(uri))} is not a redirect URI an application can have: it must be https, or http on 127.0.0.1, [::1] or localhost, without a #fragment`,
        'invalid',
        'redirect_uri',
      )
    }
  }
  return [...new Set(values)]
}

const moment = shownMoment

/** The base URL of the API, as the server of this configuration names it: the issuer, and the sites' resources under it. */
function baseUrlOf(values: Values, io: Io): string {
  return loadConfig({ env: io.env, flags: { db: values.db as string | undefined } }).baseUrl
}

/** An application as listed: from its `Client` record, whoever registered it. */
interface Listed {
  client_id: string
  client_name: string | null
  /** The site it is bound to; null for one that registered itself, which may ask for any site. */
  site: string | null
  redirect_uris: string[]
  registered_at: string
}

function listed(row: OAuthRow): Listed {
  // The library saves a client only once its metadata passed its schema: an id, redirect URIs, strings.
  const payload = JSON.parse(row.payload) as { client_id: string; client_name?: string; service_site?: string; redirect_uris: string[] }
  return {
    client_id: payload.client_id,
    client_name: payload.client_name ?? null,
    site: payload.service_site ?? null,
    redirect_uris: payload.redirect_uris,
    registered_at: row.createdAt.toISOString(),
  }
}

/** JSON as it can be shown on a terminal: the characters `shown` escapes, as JSON's own \u escapes (the same value). */
const json = (value: unknown) => `${shown(JSON.stringify(value))}\n`

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

export const oauthClientCommands: Command[] = [
  admin(
    {
      words: ['oauth-client', 'add'],
      args: ['<site>'],
      options: {
        name: { type: 'string', value: 'NAME', about: 'the name people see on the consent page (required)' },
        'redirect-uri': { type: 'string', multiple: true, value: 'URI', about: 'where the application takes people back to; once per address, at least once' },
        json: { type: 'boolean', about: 'the new client as one JSON object, for scripts' },
      },
      usage: 'oauth-client add <site> --name NAME --redirect-uri URI [--redirect-uri URI ...] [--json]',
      summary:
        'Register an OAuth application for a site: a public client (PKCE S256) whose access is bound to {base_url}/<site>. ' +
        'Redirect URIs: https, or http on 127.0.0.1, [::1] or localhost; up to 10. Prints its client id.',
    },
    // One transaction (admin's): the record is written, and its id printed, only when it commits.
    async (stores, [permalink], values, io) => {
      if (typeof values.name !== 'string') throw new UsageError('--name is required: the name the consent page shows')
      const given = (values['redirect-uri'] as unknown as string[] | undefined) ?? []
      if (given.length === 0) throw new UsageError('--redirect-uri is required: where the application receives its answer (repeat it for several)')
      const name = clientName(values.name)
      const uris = redirectUris(given)
      const site = await stores.sites.get(permalink)
      const resource = `${baseUrlOf(values, io)}/${site.permalink}`
      const client: SiteClient = { clientId: newClientId(), name, permalink: site.permalink, redirectUris: uris, issuedAt: io.clock() }
      const Adapter = recordAdapter(stores.oauth, io.clock)
      await new Adapter('Client').upsert(client.clientId, siteClientMetadata(client))
      if (values.json === true) {
        io.stdout(
          json({
            client_id: client.clientId,
            client_name: name,
            site: site.permalink,
            resource,
            redirect_uris: uris,
            token_endpoint_auth_method: 'none',
            code_challenge_method: 'S256',
            registered_at: new Date(client.issuedAt).toISOString(),
          }),
        )
        return
      }
      io.stdout(
        [
          `client id: ${client.clientId}`,
          `name: ${shown(name)}`,
          `site: ${site.permalink}`,
          ...uris.map((uri) => `redirect URI: ${uri}`),
          `A public client (no secret): it must use PKCE (S256), and its access is bound to ${resource}.`,
          '',
        ].join('\n'),
      )
    },
  ),
  admin(
    {
      words: ['oauth-client', 'list'],
      args: ['<site>'],
      optionalArgs: 1,
      options: { json: { type: 'boolean', about: 'one JSON array, for scripts' } },
      usage: 'oauth-client list [<site>] [--json]',
      summary:
        'One line per OAuth application, newest first: client id, name, site, redirect URIs, registered (UTC). ' +
        'With <site>, those registered for it; without, all, those that registered themselves included.',
      atomic: false,
    },
    async ({ sites, engine }, [permalink], values, io) => {
      const site = permalink === undefined ? undefined : (await sites.get(permalink)).permalink
      const clients = (await engine.oauth(io.clock).list('Client', {})).map(listed).filter((c) => site === undefined || c.site === site)
      if (values.json === true) {
        io.stdout(json(clients))
        return
      }
      for (const c of clients) {
        const fields = [c.client_id, c.client_name ?? '(no name)', c.site ?? 'any site (registered itself)', c.redirect_uris.join(' '), moment(new Date(c.registered_at))]
        io.stdout(`${fields.map(shown).join('\t')}\n`)
      }
    },
  ),
  admin(
    {
      words: ['oauth-client', 'remove'],
      args: ['<client_id>'],
      usage: 'oauth-client remove <client_id>',
      summary:
        'Remove an OAuth application and end every authorization of it: its access and refresh tokens stop working at once. ' +
        'A client id that starts with - (one an application registered itself may have) goes after --.',
    },
    // One transaction (admin's): the grants, the registration token and the client go together or not at all.
    async ({ oauth }, [clientId], _values, io) => {
      const Adapter = recordAdapter(oauth, io.clock)
      const clients = new Adapter('Client')
      const found = await clients.find(clientId)
      if (!found) throw new StoreError(`there is no OAuth application "${shown(clientId)}"`, 'not_found', 'client_id')
      const grants = await oauth.list('Grant', { clientId })
      for (const grant of grants) await oauth.destroyGrant(grant.grantId!)
      // What the library keeps of the client outside its grants: a self-registered one's registration access token.
      for (const row of await oauth.list('RegistrationAccessToken', { clientId })) await oauth.destroy(row.model, row.id)
      await clients.destroy(clientId)
      const name = typeof found.client_name === 'string' ? ` (${shown(found.client_name)})` : ''
      io.stdout(`OAuth application ${shown(clientId)}${name} removed; ${plural(grants.length, 'authorization')} ended\n`)
    },
  ),
]
