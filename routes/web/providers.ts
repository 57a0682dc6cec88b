import type { FastifyReply, FastifyRequest } from 'fastify'
import { forbiddenPage } from './pages.ts'
import type { SignInProvider } from '../../db/stores/sign-in-providers.ts'
import { SECURITY_HEADERS } from '../../plugins/views.ts'

// What the pages that send a browser to a site's identity provider share (issue 73;
// routes/web/company-sign-in.ts): the CSP that lets their forms go on to it, and which provider a
// person confirms it is them at (routes/web/confirm.ts).

/** The page's CSP, letting its forms go on to the site's identity providers (a sign-in there is a redirect from our own form's answer). */
export async function providersCsp(request: FastifyRequest, providers: SignInProvider[]): Promise<Record<string, string>> {
  if (providers.length === 0) return {}
  const { signInProviders, companySignIn } = request.server
  const settings = providers.flatMap((p) => signInProviders.settingsOf(p) ?? [])
  return { 'content-security-policy': SECURITY_HEADERS['content-security-policy'].replace("form-action 'self'", ["form-action 'self'", ...companySignIn.signInOrigins(settings)].join(' ')) }
}

/**
 * The provider a signed-in person confirms it is them at (sudo mode): the one their session came
 * from, while the site has it. Undefined: they confirm with our own second factor or password
 * (routes/web/confirm.ts).
 */
export async function confirmingProvider(request: FastifyRequest): Promise<SignInProvider | undefined> {
  const { site, user } = request.web
  return user!.provider ? request.server.signInProviders.find(site.id, user!.provider.id) : undefined
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A form that changes what opens the person's account on every site (its password, name, legacy token, second factors). */
    accountWide?: boolean
  }
}

/**
 * preHandler of every page: a session a site's identity provider made acts on that site only. What
 * opens the account on every site (its password, its name, the legacy token, second factors and
 * passkeys) is changed in a session of the account's own: one site's administrators choose its
 * provider, and must not reach what the person holds on other sites (docs/decisions.md, "Staff
 * sign-in with the company's account").
 */
export async function accountWideOwnSession(request: FastifyRequest, reply: FastifyReply) {
  if (!request.routeOptions.config.accountWide || !request.web.user?.provider) return
  return forbiddenPage(request, reply, {
    title: 'Not in this session',
    message: "You signed in with the company's account, which speaks for this site only: your account's password, name, legacy token, second factors and passkeys, which hold on every site of yours, are changed in a session of your own.",
    hint: 'Sign in with your email and password (or a passkey) to change them; on a site whose staff sign in with the company\'s account only, ask an administrator to trust its second factor.',
  })
}
