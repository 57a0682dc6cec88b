import type { FastifyRequest } from 'fastify'
import type { AuthenticationResponseJSON, AuthenticatorTransport, RegistrationResponseJSON } from '@simplewebauthn/server'
import type { Passkey, PasskeyDescriptor } from '../../db/stores/second-factors.ts'
import { challengeExpiry, CHALLENGE_MS, makeChallenge } from '../../lib/passkey-challenges.ts'

// Passkeys and security keys (WebAuthn) on the pages (docs/decisions.md, "Passkeys"), with
// @simplewebauthn/server here and its browser part served by the service itself
// (views/assets/passkeys.js). A page that offers a passkey carries the ceremony's options; the
// browser's answer comes back in a form field, `passkey`, of the page's usual form, so CSRF, the
// failure budgets and the redirects stay those of the form.

/** What a passkey is asked for; each ceremony's challenge answers only its own. */
export type Ceremony = 'register' | 'sign_in' | 'second_step' | 'confirm'

// Loaded on first use: most requests never touch a passkey (docs/decisions.md, "Loaded on first use").
const webauthn = () => import('@simplewebauthn/server')

/** The relying party: the host of the site's pages (a passkey is bound to it), and the origin its pages are on. */
function relyingParty(request: FastifyRequest) {
  const url = new URL(request.server.urls.siteWeb(request.web.site.permalink))
  return { id: url.hostname, origin: url.origin, name: `${request.web.site.name} Service Desk` }
}

/**
 * What the challenge is bound to: the ceremony, the site, and the browser's session (or, signed
 * out, its pre-session, which the page's form made: pageData runs first). A challenge shown in one
 * browser is no use in another.
 */
function context(request: FastifyRequest, ceremony: Ceremony): string {
  const { site, sessionId, preSession } = request.web
  return `passkey ${ceremony}|${site.id}|${sessionId ? `s:${sessionId}` : `p:${preSession}`}`
}

const sign = (request: FastifyRequest) => (text: string) => request.server.secretBox.digest(text)

/** A new challenge of this page, as the options carry it (simplewebauthn encodes the text's UTF-8). */
const challenge = (request: FastifyRequest, ceremony: Ceremony) => makeChallenge(sign(request), context(request, ceremony), request.server.clock())

/** Checks the challenge the browser signed (base64url of ours) and uses it up: whether it may be answered now. */
function answerable(request: FastifyRequest, ceremony: Ceremony) {
  return async (signed: string): Promise<boolean> => {
    const text = Buffer.from(signed, 'base64url').toString('utf8')
    const expiry = challengeExpiry(sign(request), context(request, ceremony), text, request.server.clock())
    return expiry !== undefined && (await request.server.secondFactors.claimChallenge(text, expiry))
  }
}

/** The options of a registration: the person's other passkeys are left out, so one authenticator is not added twice. */
export async function registrationOptions(request: FastifyRequest, existing: PasskeyDescriptor[]) {
  const user = request.web.user!
  const rp = relyingParty(request)
  return (await webauthn()).generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.name,
    // An opaque handle, not the account's id or address: authenticators may show or sync it.
    userID: Buffer.from(request.server.secretBox.digest(`passkey user ${user.id}`), 'hex'),
    challenge: challenge(request, 'register'),
    timeout: CHALLENGE_MS,
    attestationType: 'none',
    excludeCredentials: existing,
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
  })
}

/**
 * The options of a sign-in or a confirmation. Signing in with a passkey alone asks the
 * authenticator to verify the person (a PIN or a fingerprint), since nothing else is asked; as a
 * second step or a confirmation, the person's own passkeys are offered.
 */
export async function authenticationOptions(request: FastifyRequest, ceremony: Exclude<Ceremony, 'register'>, allowed: PasskeyDescriptor[] = []) {
  return (await webauthn()).generateAuthenticationOptions({
    rpID: relyingParty(request).id,
    challenge: challenge(request, ceremony),
    timeout: CHALLENGE_MS,
    userVerification: ceremony === 'sign_in' ? 'required' : 'preferred',
    allowCredentials: allowed.map(({ id, transports }) => ({ id, transports: transports as AuthenticatorTransport[] | undefined })),
  })
}

/** A credential id as browsers send it: base64url, and not longer than WebAuthn allows (1023 bytes). */
const CREDENTIAL_ID = /^[\w-]{1,1364}$/

/** The browser's answer from a form field, when it is a JSON object with a credential id; anything else is no answer. */
function parsed<T>(field: unknown): T | undefined {
  if (typeof field !== 'string' || field === '') return undefined
  try {
    const value: unknown = JSON.parse(field)
    const id = value !== null && typeof value === 'object' ? (value as { id?: unknown }).id : undefined
    return typeof id === 'string' && CREDENTIAL_ID.test(id) ? (value as T) : undefined
  } catch {
    return undefined
  }
}

/** A registration the browser answered, checked: the new credential, or undefined when it does not hold. */
export async function registeredPasskey(request: FastifyRequest, field: unknown) {
  const response = parsed<RegistrationResponseJSON>(field)
  if (!response) return undefined
  const rp = relyingParty(request)
  try {
    const { registrationInfo } = await (await webauthn()).verifyRegistrationResponse({
      response,
      expectedChallenge: answerable(request, 'register'),
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    })
    // Unverified, there is no registrationInfo.
    return registrationInfo?.credential
  } catch (error) {
    request.log.info({ reason: (error as Error).message }, 'a passkey registration was refused')
    return undefined
  }
}

/**
 * A sign-in or confirmation the browser answered with a passkey, checked: the passkey (whose
 * account it is), or undefined. With `userId`, only that person's passkeys count.
 */
export async function passkeyAnswer(request: FastifyRequest, ceremony: Exclude<Ceremony, 'register'>, field: unknown, userId?: number): Promise<Passkey | undefined> {
  const response = parsed<AuthenticationResponseJSON>(field)
  const passkey = response && (await request.server.secondFactors.passkey(response.id))
  if (!response || !passkey || (userId !== undefined && passkey.factor.userId !== userId)) return undefined
  const rp = relyingParty(request)
  try {
    const verdict = await (await webauthn()).verifyAuthenticationResponse({
      response,
      expectedChallenge: answerable(request, ceremony),
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: passkey.factor.credentialId!, publicKey: passkey.publicKey, counter: passkey.factor.signCount! },
      requireUserVerification: ceremony === 'sign_in',
    })
    if (!verdict.verified) return undefined
    await request.server.secondFactors.usedPasskey(passkey.factor.id, verdict.authenticationInfo.newCounter)
    return passkey
  } catch (error) {
    request.log.info({ reason: (error as Error).message }, 'a passkey answer was refused')
    return undefined
  }
}
