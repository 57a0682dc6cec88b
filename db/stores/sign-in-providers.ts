import { and, asc, eq, type SQL } from '../drizzle.ts'
import ipaddr from 'ipaddr.js'
import { refusedClass } from '../../lib/webhook-address.ts'
import { unguarded, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { isUniqueViolation } from '../../lib/database-errors.ts'
import { isClientSecret, issuerProblem } from '../../lib/mail-oauth.ts'
import { domainOf, MAX_DOMAINS, MAX_PROVIDER_NAME, ofDomains, PRESET_ISSUERS, providerKinds, tenantProblem, type DomainRole, type ProviderKind } from '../../lib/company-sign-in.ts'
import type { ClientSettings } from '../../lib/openid.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { isStaffRole, roleFlags, STAFF_ROLE } from './staff.ts'
import { findOrMakeUser, findUserByEmail } from './users.ts'

// The identity providers a site's staff sign in at (issue 73; lib/company-sign-in.ts;
// docs/decisions.md, "Staff sign-in with the company's account"), and who each provider's subjects
// are here. Defined by the site's administrators (the page, the API) or its operator (the CLI); the
// client secret sealed with the server key, never shown again. Who gets in is decided here, in one
// transaction with what it writes: the link of a first sign-in, a newcomer of a named domain.

export type SignInProvider = Tables['signInProviders']['$inferSelect']

export interface ProviderInput {
  name: string
  kind: ProviderKind
  /** The issuer of an `oidc` provider (discovery at its /.well-known/openid-configuration). */
  issuer?: string
  /** The Microsoft Entra ID tenant of a `microsoft` provider: its id or one of its domains. */
  tenant?: string
  clientId: string
  clientSecret: string
  domains?: string[]
  domainRole?: DomainRole | null
  trustMfa?: boolean
}

export type ProviderChange = Partial<Pick<ProviderInput, 'name' | 'clientId' | 'clientSecret' | 'domains' | 'domainRole' | 'trustMfa'>>

/** Why a provider's sign-in did not let the person in, as the page and the log say it. */
export type AdmissionRefusal = 'disabled' | 'not_staff' | 'customer' | 'linked_elsewhere'

export type Admission = { kind: 'admitted'; userId: number; linked: boolean; joined: DomainRole | null } | { kind: 'refused'; reason: AdmissionRefusal; userId: number | null }

/** The domains of a provider, as its row keeps them. */
export const domainsOf = (provider: SignInProvider): string[] => JSON.parse(provider.domains) as string[]

/** The fields of a provider the record of changes shows (never its secret). */
const recorded = (p: { name: string; issuer: string; clientId: string; domains: string; domainRole: string | null; trustMfa: boolean }) => ({
  name: p.name,
  issuer: p.issuer,
  client_id: p.clientId,
  domains: JSON.parse(p.domains) as string[],
  domain_role: p.domainRole,
  trust_mfa: p.trustMfa,
})

function checkedName(name: string): string {
  const trimmed = name.replace(/\s+/g, ' ').trim()
  if (trimmed === '' || trimmed.length > MAX_PROVIDER_NAME || /[\p{Cc}\p{Cf}]/u.test(trimmed)) throw new StoreError(`the name on its button must be 1 to ${MAX_PROVIDER_NAME} characters on one line`, 'invalid', 'name')
  return trimmed
}

function checkedDomains(domains: string[]): string {
  if (domains.length > MAX_DOMAINS) throw new StoreError(`at most ${MAX_DOMAINS} domains`, 'invalid', 'domains')
  const kept = domains.map((d) => {
    const domain = domainOf(d)
    if (!domain) throw new StoreError(`"${d.slice(0, 100)}" is not a domain name such as example.com`, 'invalid', 'domains')
    return domain
  })
  return JSON.stringify([...new Set(kept)])
}

function checkedClient(clientId: string | undefined, clientSecret: string | undefined): void {
  if (clientId !== undefined && !/^[\x21-\x7E]{1,300}$/.test(clientId)) throw new StoreError('the client id must be the one the provider gave, printable and without spaces', 'invalid', 'client_id')
  if (clientSecret !== undefined && !isClientSecret(clientSecret)) throw new StoreError('the client secret must be the one the provider gave, printable on one line', 'invalid', 'client_secret')
}

/**
 * The issuer of a new provider: its preset's, or the one given for any other. `operator`: given at
 * the command line (or by the service itself), which may name a provider on this machine or the
 * operator's network; a site's administrators may not (the service would fetch it: SSRF).
 */
function issuerOf(input: ProviderInput, operator: boolean): string {
  if (!(providerKinds as readonly string[]).includes(input.kind)) throw new StoreError(`the kind must be ${providerKinds.join(', ')}`, 'invalid', 'kind')
  if (input.kind === 'google') return PRESET_ISSUERS.google('')
  if (input.kind === 'microsoft') {
    const tenant = (input.tenant ?? '').trim()
    const problem = tenant === '' ? "must be your company's tenant id or a domain of it" : tenantProblem(tenant)
    if (problem) throw new StoreError(`the tenant ${problem}`, 'invalid', 'tenant')
    return PRESET_ISSUERS.microsoft(tenant)
  }
  const issuer = (input.issuer ?? '').trim().replace(/\/$/, '')
  const problem = issuer === '' ? "must be the provider's issuer address, such as https://login.example.com" : issuerProblem(issuer)
  if (problem) throw new StoreError(`the issuer ${problem}`, 'invalid', 'issuer')
  const host = new URL(issuer).hostname.replace(/^\[(.*)\]$/, '$1')
  if (/(^|\.)(login\.microsoftonline\.com|b2clogin\.com)$/i.test(host)) throw new StoreError('the issuer of Microsoft Entra ID is given as a provider of the kind microsoft, with your tenant', 'invalid', 'issuer')
  if (!operator && !publicHost(host)) throw new StoreError('the issuer must be a public address: one on this machine or a private network is for the operator to add (service-desk sign-in-provider add)', 'invalid', 'issuer')
  return issuer
}

/** Whether a host is a name or a public address as webhooks judge one (lib/webhook-address.ts): not localhost, a loopback, private or link-local address. */
const publicHost = (host: string) => (ipaddr.isValid(host) ? refusedClass(host) === null : host !== 'localhost' && !host.endsWith('.localhost'))

export function createSignInProviderStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { signInProviders, signInLinks, memberships, users, webSessions } } = port

  async function find(siteId: number, id: number): Promise<SignInProvider | undefined> {
    const [row] = await db.select().from(signInProviders).where(and(eq(signInProviders.siteId, siteId), eq(signInProviders.id, id)))
    return row
  }

  async function get(siteId: number, id: number): Promise<SignInProvider> {
    const found = await find(siteId, id)
    if (!found) throw new StoreError(`this site has no sign-in provider ${id}`, 'not_found', 'id')
    return found
  }

  const uniqueName = async <T>(work: () => Promise<T>, name: string): Promise<T> => {
    try {
      return await work()
    } catch (error) {
      // The one unique index besides the id: the site's names.
      throw isUniqueViolation(error) ? new StoreError(`this site has a sign-in provider named ${name} already`, 'conflict', 'name') : error
    }
  }

  return {
    find,

    async list(siteId: number): Promise<SignInProvider[]> {
      return db.select().from(signInProviders).where(eq(signInProviders.siteId, siteId)).orderBy(asc(signInProviders.name), asc(signInProviders.id))
    },

    /** What openid-client needs of a provider, its secret opened; null when it is sealed under another server key. */
    settingsOf: unguarded((provider: SignInProvider): ClientSettings | null => {
      const clientSecret = box.open(provider.secret)
      return clientSecret === null ? null : { issuer: provider.issuer, clientId: provider.clientId, clientSecret }
    }),

    async add(siteId: number, input: ProviderInput, by?: Actor): Promise<SignInProvider> {
      const name = checkedName(input.name)
      const issuer = issuerOf(input, by === undefined || by.via === 'cli')
      checkedClient(input.clientId, input.clientSecret)
      const domains = checkedDomains(input.domains ?? [])
      const now = new Date(clock())
      return uniqueName(
        () =>
          port.atomic(async (tx) => {
            const [row] = await tx.db
              .insert(signInProviders)
              .values({ siteId, name, kind: input.kind, issuer, clientId: input.clientId, secret: box.seal(input.clientSecret), domains, domainRole: input.domainRole ?? null, trustMfa: input.trustMfa ?? false, createdAt: now, updatedAt: now })
              .returning()
            await recordChange(tx, clock, by, siteId, 'sign_in_provider.added', name, { after: recorded(row!) })
            return row!
          }),
        name,
      )
    },

    async update(siteId: number, id: number, changes: ProviderChange, by?: Actor): Promise<SignInProvider> {
      const before = await get(siteId, id)
      checkedClient(changes.clientId, changes.clientSecret)
      const set = {
        ...(changes.name !== undefined && { name: checkedName(changes.name) }),
        ...(changes.clientId !== undefined && { clientId: changes.clientId }),
        ...(changes.clientSecret !== undefined && { secret: box.seal(changes.clientSecret) }),
        ...(changes.domains !== undefined && { domains: checkedDomains(changes.domains) }),
        ...(changes.domainRole !== undefined && { domainRole: changes.domainRole }),
        ...(changes.trustMfa !== undefined && { trustMfa: changes.trustMfa }),
        updatedAt: new Date(clock()),
      }
      return uniqueName(
        () =>
          port.atomic(async (tx) => {
            const [row] = await tx.db.update(signInProviders).set(set).where(and(eq(signInProviders.siteId, siteId), eq(signInProviders.id, id))).returning()
            const difference = changedFields(recorded(before), recorded(row!))
            // A new secret is a change the record names, without the secret.
            if (changes.clientSecret !== undefined) Object.assign(difference.after, { client_secret: 'replaced' })
            if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'sign_in_provider.changed', row!.name, difference)
            return row!
          }),
        changes.name ?? before.name,
      )
    },

    /**
     * Removes a provider: its links to people go with it, and the sessions it made stay until they
     * end (a person signing in with it again is refused: it is gone). Refused while the site lets its
     * staff sign in with the company's account only and this is its last provider.
     */
    async remove(siteId: number, id: number, by?: Actor): Promise<SignInProvider> {
      return port.atomic(async (tx) => {
        const provider = await get(siteId, id)
        const { sites } = tx.tables
        const [site] = await tx.db.select({ only: sites.companySignInOnly }).from(sites).where(eq(sites.id, siteId))
        const all = await tx.db.select({ id: signInProviders.id }).from(signInProviders).where(eq(signInProviders.siteId, siteId))
        if (site?.only && all.length === 1) throw new StoreError("this is the site's only sign-in provider while its staff sign in with the company's account only: switch that off first", 'conflict', 'id')
        await tx.db.delete(signInProviders).where(eq(signInProviders.id, id))
        await recordChange(tx, clock, by, siteId, 'sign_in_provider.removed', provider.name, { before: recorded(provider) })
        return provider
      })
    },

    /**
     * Who a verified ID token of `provider` signs in as on its site: the account its subject was
     * linked to; else, at a first sign-in, the staff account of that address (linked now); else a
     * newcomer of one of the provider's domains, made a member of the staff as the provider says.
     * Never a customer, a disabled account, nor an account linked to another subject of the provider.
     */
    async admit(provider: SignInProvider, subject: string, address: string, name: string, by: { address: string | null }): Promise<Admission> {
      return port.atomic(async (tx) => {
        const now = new Date(clock())
        const roleOf = async (userId: number) => {
          const [m] = await tx.db.select({ role: memberships.role }).from(memberships).where(and(eq(memberships.siteId, provider.siteId), eq(memberships.userId, userId)))
          return m?.role
        }
        const [link] = await tx.db.select().from(signInLinks).where(and(eq(signInLinks.providerId, provider.id), eq(signInLinks.subject, subject)))
        if (link) {
          const [user] = await tx.db.select({ disabled: users.disabled }).from(users).where(eq(users.id, link.userId))
          if (user!.disabled) return { kind: 'refused', reason: 'disabled', userId: link.userId }
          if (!isStaffRole(await roleOf(link.userId))) return { kind: 'refused', reason: 'not_staff', userId: link.userId }
          await tx.db.update(signInLinks).set({ lastSignInAt: now }).where(and(eq(signInLinks.providerId, provider.id), eq(signInLinks.subject, subject)))
          return { kind: 'admitted', userId: link.userId, linked: false, joined: null }
        }
        const known = await findUserByEmail(tx, address)
        if (known?.disabled) return { kind: 'refused', reason: 'disabled', userId: known.id }
        if (known) {
          const [other] = await tx.db.select({ subject: signInLinks.subject }).from(signInLinks).where(and(eq(signInLinks.providerId, provider.id), eq(signInLinks.userId, known.id)))
          if (other) return { kind: 'refused', reason: 'linked_elsewhere', userId: known.id }
        }
        const role = known ? await roleOf(known.id) : undefined
        if (role === 'customer') return { kind: 'refused', reason: 'customer', userId: known!.id }
        let joined: DomainRole | null = null
        let userId = known?.id
        if (!isStaffRole(role)) {
          if (!provider.domainRole || !ofDomains(address, domainsOf(provider))) return { kind: 'refused', reason: 'not_staff', userId: known?.id ?? null }
          userId ??= (await findOrMakeUser(tx, clock, box, address, () => ({ email: address, name }))).id
          joined = provider.domainRole as DomainRole
          await tx.db.insert(memberships).values({ siteId: provider.siteId, userId, role: STAFF_ROLE, ...roleFlags(joined), createdAt: now })
          await recordChange(tx, clock, { id: userId, name: address, via: 'page', address: by.address }, provider.siteId, 'team.joined', address, { role: joined, by: provider.name })
        }
        await tx.db.insert(signInLinks).values({ providerId: provider.id, subject, userId: userId!, createdAt: now, lastSignInAt: now })
        return { kind: 'admitted', userId: userId!, linked: true, joined }
      })
    },

    /** The subject linked to a person at a provider, or undefined (sudo mode checks that the same person signed in again). */
    async subjectOf(providerId: number, userId: number): Promise<string | undefined> {
      const [link] = await db.select({ subject: signInLinks.subject }).from(signInLinks).where(and(eq(signInLinks.providerId, providerId), eq(signInLinks.userId, userId)))
      return link?.subject
    },

    /**
     * Ends the sessions a provider's back-channel logout names: those of its session `sid`, or every
     * session it made for the subject. The accounts whose sessions ended, one for each session.
     */
    async endSessions(provider: SignInProvider, order: { sub?: string; sid?: string }): Promise<number[]> {
      const { sid, sub } = order
      const ofProvider = eq(webSessions.providerId, provider.id)
      const ended = (where: SQL | undefined) => db.delete(webSessions).where(and(ofProvider, where)).returning({ userId: webSessions.userId })
      if (sid !== undefined) return (await ended(eq(webSessions.providerSid, sid))).map((s) => s.userId)
      const [link] = await db.select({ userId: signInLinks.userId }).from(signInLinks).where(and(eq(signInLinks.providerId, provider.id), eq(signInLinks.subject, sub!)))
      return link ? (await ended(eq(webSessions.userId, link.userId))).map((s) => s.userId) : []
    },
  }
}

export type SignInProviderStore = ReturnType<typeof createSignInProviderStore>
