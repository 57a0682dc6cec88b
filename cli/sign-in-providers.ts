import { OPERATOR } from '../db/stores/audit.ts'
import { domainsOf, type SignInProvider } from '../db/stores/sign-in-providers.ts'
import { domainRoles, providerKinds, type DomainRole, type ProviderKind } from '../lib/company-sign-in.ts'
import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// A site's identity providers for its staff's sign-in on the command line (issue 73;
// docs/sign-in-providers.md), as the API and Administration -> Sign-in have them. The operator's
// `site policy <site> --company-sign-in-only off` is the way back in when a provider fails.

/** One line of a provider: id, name, kind, issuer, client id, domains and their role, whether its second factor is trusted. */
function line(p: SignInProvider): string {
  const domains = domainsOf(p).join(',')
  return [p.id, p.name, p.kind, p.issuer, p.clientId, domains === '' ? '-' : domains, p.domainRole ?? '-', p.trustMfa ? 'trusts its mfa' : 'asks ours'].map((field) => shown(String(field))).join('\t')
}

export const signInProviderCommands: Command[] = [
  admin(
    {
      words: ['sign-in-provider', 'list'],
      args: ['<site>'],
      usage: 'sign-in-provider list <site>',
      summary: "The identity providers the site's staff sign in at, one line each: id, name, kind, issuer, client id, email domains whose new people join, as what, and whether its second factor stands for ours.",
      atomic: false,
    },
    async ({ sites, signInProviders }, [permalink], _values, io) => {
      const site = await sites.get(permalink!)
      for (const p of await signInProviders.list(site.id)) io.stdout(`${line(p)}\n`)
    },
  ),
  admin(
    {
      words: ['sign-in-provider', 'add'],
      args: ['<site>', '<name>'],
      options: {
        kind: { type: 'string', value: 'KIND', about: `${providerKinds.join(', ')}` },
        issuer: { type: 'string', value: 'URL', about: 'the issuer of an oidc provider (its configuration at <issuer>/.well-known/openid-configuration)' },
        tenant: { type: 'string', value: 'TENANT', about: "a microsoft provider's tenant id or one of its domains" },
        'client-id': { type: 'string', value: 'ID', about: 'the application registered at the provider' },
        domain: { type: 'string', value: 'DOMAIN', multiple: true, about: 'an email domain whose new people join the staff at their first sign-in (give it again for each)' },
        role: { type: 'string', value: domainRoles.join('|'), about: 'what they join as' },
        'trust-mfa': { type: 'boolean', about: "its second factor (its answer's amr or acr) stands for ours" },
      },
      usage: 'sign-in-provider add <site> <name> --kind google|microsoft|oidc [--issuer URL] [--tenant TENANT] --client-id ID [--domain DOMAIN]... [--role supporter|collaborator] [--trust-mfa] < secret',
      summary: 'A new identity provider, its client secret read from standard input (never the command line, which other users may see): its button "Sign in with <name>" is on the sign-in page. Register <site_url>/login/provider/callback as its redirect address.',
    },
    async ({ sites, signInProviders }, [permalink, name], values, io) => {
      if (typeof values.kind !== 'string' || !(providerKinds as readonly string[]).includes(values.kind)) throw new UsageError(`--kind is one of ${providerKinds.join(', ')}`)
      if (typeof values['client-id'] !== 'string') throw new UsageError('--client-id is the application registered at the provider')
      const clientSecret = (await io.readStdin()).replace(/\r?\n$/, '')
      if (clientSecret === '') throw new UsageError('give the client secret on standard input, such as: service-desk sign-in-provider add acme Acme --kind google --client-id ID < secret-file')
      const role = values.role
      if (role !== undefined && !(domainRoles as readonly unknown[]).includes(role)) throw new UsageError(`--role is ${domainRoles.join(' or ')}, not "${String(role)}"`)
      const site = await sites.get(permalink!)
      const made = await signInProviders.add(
        site.id,
        {
          name: name!,
          kind: values.kind as ProviderKind,
          ...(typeof values.issuer === 'string' && { issuer: values.issuer }),
          ...(typeof values.tenant === 'string' && { tenant: values.tenant }),
          clientId: values['client-id'],
          clientSecret,
          domains: (values.domain as unknown as string[] | undefined) ?? [],
          domainRole: (role as DomainRole | undefined) ?? null,
          trustMfa: values['trust-mfa'] === true,
        },
        OPERATOR,
      )
      io.stdout(`sign-in provider ${made.id} of ${site.permalink}: ${line(made)}\n`)
    },
  ),
  admin(
    {
      words: ['sign-in-provider', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'sign-in-provider remove <site> <id>',
      summary: 'Remove an identity provider (its id from `sign-in-provider list`): the people it linked sign in another way.',
    },
    async ({ sites, signInProviders }, [permalink, id], _values, io) => {
      if (!/^[1-9]\d{0,9}$/.test(id!)) throw new UsageError(`a provider id is a number, not "${id}"`)
      const site = await sites.get(permalink!)
      const removed = await signInProviders.remove(site.id, Number(id), OPERATOR)
      io.stdout(`sign-in provider ${removed.id} (${shown(removed.name)}) of ${site.permalink} removed\n`)
    },
  ),
]
