import { isLoopbackHost } from './mail-oauth.ts'
// Mail to the people of the help desk (docs/decisions.md, "Token lifecycle" and "Site
// administrators"): expiry notices, and what an administrator did to someone's credentials. Sent
// only when SERVICE_SMTP_URL is set; without it `enabled` is false and `send` does nothing, so
// every caller is written once. No mail ever holds a credential's value.

export interface MailSettings {
  /** An smtp:// or smtps:// address, credentials included: never logged. */
  smtpUrl: string
  /** The From of the mails. */
  from: string
  /** A mailbox connected with OAuth signs in with its access token (XOAUTH2), not a password of the address. */
  oauth?: { user: string; accessToken: string }
}

export interface Mail {
  to: string
  /** Copies (a discussion's participants). */
  cc?: string[]
  subject: string
  text: string
  /** The mailer's own From unless given (a reply goes from its site's mailbox). */
  from?: string
  /** Where an answer goes (a supporter's reply address, lib/reply-address.ts). */
  replyTo?: string
  /** Threading (RFC 5322 3.6.4): this mail's Message-ID and the ones it answers. */
  messageId?: string
  inReplyTo?: string
  references?: string[]
  /** Sent by the service on its own (an acknowledgement): `Auto-Submitted: auto-replied` (RFC 3834), so no auto-responder answers it. */
  automatic?: boolean
  /** Files that go with it (a reply's), each as it was uploaded. */
  attachments?: MailAttachment[]
}

export interface MailAttachment {
  filename: string
  content: Buffer
  contentType: string
}

export interface Mailer {
  readonly enabled: boolean
  /** Sends one plain-text mail, with its files if any; throws when the server refuses it. */
  send(mail: Mail): Promise<void>
  close(): void
}

/**
 * How long the mailer waits on an SMTP server: to connect, for its greeting, and for any answer
 * (nodemailer's own defaults are two, half and ten minutes). A send that stops here is tried
 * again; the outbox keeps its lease while a send is under way (plugins/mail/sender.ts).
 */
export const SMTP_DEADLINES = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/** A mailer over SMTP, or one that sends nothing without settings. nodemailer is loaded only with settings. */
export async function createMailer(settings: MailSettings | undefined): Promise<Mailer> {
  const transport = settings && (await import('nodemailer')).createTransport({ ...(settings.oauth ? oauthServer(settings.smtpUrl, settings.oauth) : { url: settings.smtpUrl }), ...SMTP_DEADLINES })
  return {
    enabled: transport !== undefined,
    async send({ automatic, ...mail }: Mail) {
      if (transport && settings) await transport.sendMail({ from: settings.from, ...mail, ...(automatic && { headers: { 'Auto-Submitted': 'auto-replied' } }) })
    },
    close: () => transport?.close(),
  }
}

/**
 * The SMTP server of an address (smtps://: TLS from the start, on 465 by default; smtp://: STARTTLS,
 * on 587), signing in with an access token as the address's user (the account signed in at the
 * provider, which a shared mailbox's mail is sent by), or as `user` when it names none.
 */
export function oauthServer(smtpUrl: string, { user, accessToken }: { user: string; accessToken: string }) {
  const url = new URL(smtpUrl)
  const secure = url.protocol === 'smtps:'
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  // The token goes only over TLS (STARTTLS required, never skipped by a server that stops offering it), but to this machine.
  return { host, port: url.port === '' ? (secure ? 465 : 587) : Number(url.port), secure, requireTLS: !secure && !isLoopbackHost(host), auth: { type: 'OAuth2' as const, user: decodeURIComponent(url.username) || user, accessToken } }
}
