import type { ImapFlow } from 'imapflow'
import { isLoopbackHost } from './mail-oauth.ts'
import { oauthServer } from './mailer.ts'
import { shownImap, shownSmtp, type ImapSettings } from './mail.ts'

// The IMAP client of a mailbox (imapflow, loaded on first use: most processes fetch no mail), for
// the fetcher (plugins/mail/fetcher.ts) and `service-desk mailbox test`, and that command's checks.

/** A client for the mailbox, not yet connected; its errors are the caller's to listen to. A connected mailbox signs in with its access token (XOAUTH2 or OAUTHBEARER, as the server offers). */
export async function imapClient(settings: ImapSettings, access?: { user: string; accessToken: string }): Promise<ImapFlow> {
  const { ImapFlow } = await import('imapflow')
  return new ImapFlow({
    host: settings.host,
    port: settings.port,
    secure: settings.secure,
    auth: access ? { user: access.user, accessToken: access.accessToken } : { user: settings.user, pass: settings.password },
    // A token goes only over TLS (STARTTLS required), but to this machine.
    ...(access && !settings.secure && !isLoopbackHost(settings.host) && { doSTARTTLS: true }),
    logger: false,
    connectionTimeout: 30_000,
    greetingTimeout: 15_000,
  })
}

/** What an IMAP or SMTP failure says, in words for a person (never a password: the libraries' errors hold none). */
export function failureWords(error: unknown): string {
  const { responseText, response, message, code } = error as { responseText?: string; response?: unknown; message?: string; code?: string }
  if (code === 'ECONNREFUSED' || /\bECONNREFUSED\b/.test(message ?? '')) return 'the server refused the connection'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the server name was not found'
  if (code === 'ETIMEDOUT' || code === 'CONNECT_TIMEOUT' || code === 'GREETING_TIMEOUT') return 'the server did not answer in time'
  // An SMTP server's reply is nodemailer's `response`; imapflow puts the failed command there.
  return responseText ?? (typeof response === 'string' ? response : (message ?? String(error)))
}

/** Signs in to the mailbox and reads its folder: what it holds, or throws. */
export async function checkImap(settings: ImapSettings, access?: { user: string; accessToken: string }): Promise<string> {
  const client = await imapClient(settings, access)
  client.on('error', () => {})
  try {
    await client.connect()
    const status = await client.status(settings.folder, { messages: true, unseen: true })
    if (!status) throw new Error(`the folder ${settings.folder} could not be read`)
    const idle = client.capabilities.has('IDLE') ? 'new mail is announced (IDLE)' : 'no IDLE: looked at every SERVICE_MAIL_FETCH_SECONDS'
    return `IMAP ${shownImap(settings)}: signed in; ${settings.folder} holds ${status.messages} messages, ${status.unseen} unread; ${idle}`
  } finally {
    await client.logout().catch(() => client.close())
  }
}

/** Signs in to the SMTP server (without sending anything), or throws; a connected mailbox with its access token. */
export async function checkSmtp(smtpUrl: string, access?: { user: string; accessToken: string }): Promise<string> {
  const transport = (await import('nodemailer')).createTransport(access ? oauthServer(smtpUrl, access) : smtpUrl)
  try {
    await transport.verify()
    return `SMTP ${shownSmtp(smtpUrl)}: signed in`
  } finally {
    transport.close()
  }
}
