// Asking rspamd what it makes of a message (docs/decisions.md, "Which mail is spam"): its HTTP
// protocol's `POST /checkv2`, the raw message as the body and what the door knows of the sender as
// headers (https://rspamd.com/doc/developers/protocol.html). A few lines of fetch, so no client
// library: the answer's `action` is rspamd's verdict, the operator's thresholds already applied.

/** How long a check may take before the message is taken without rspamd's word (the door waits meanwhile). */
export const RSPAMD_TIMEOUT_MS = 10_000

/** rspamd's actions that say spam; `greylist` and `soft reject` ask the sender to come back, `no action` is not spam. */
const SPAM_ACTIONS = new Set(['reject', 'add header', 'rewrite subject'])

/** What the door that took a message knows of its sender, for rspamd's own checks (SPF, the sender's address's reputation). */
export interface Envelope {
  /** The connecting address (the built-in receiver's; none for IMAP, whose provider took the mail). */
  ip?: string
  helo?: string
  /** The envelope's sender (MAIL FROM), or else the From's address. */
  from: string
  /** The mailbox it was taken for. */
  rcpt?: string
}

/**
 * rspamd's verdict in words, or null when it is not spam. Throws when the answer is not one rspamd
 * gives (so the caller says rspamd could not check it, rather than reading nonsense as a verdict).
 */
export function rspamdReason(answer: unknown): string | null {
  const { action, score, required_score: required } = (answer ?? {}) as { action?: unknown; score?: unknown; required_score?: unknown }
  if (typeof action !== 'string' || typeof score !== 'number') throw new Error('rspamd answered without an action and a score')
  if (!SPAM_ACTIONS.has(action)) return null
  const of = typeof required === 'number' ? ` of ${required}` : ''
  return `rspamd said ${action.slice(0, 40)} (score ${Math.round(score * 100) / 100}${of})`
}

/** Header values as HTTP allows them: no line breaks or other controls (an address is the stranger's own words). */
const headerValue = (text: string) => text.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 500)

/**
 * Asks the rspamd at `base` (its normal worker, `http://127.0.0.1:11333`) about a message: its
 * verdict (rspamdReason). Throws when rspamd cannot say: unreachable, slower than `timeoutMs`, an
 * answer not its own.
 */
export async function askRspamd(base: string, raw: Buffer, envelope: Envelope, timeoutMs = RSPAMD_TIMEOUT_MS): Promise<string | null> {
  const headers = new Headers({ 'content-type': 'application/octet-stream', from: headerValue(envelope.from) })
  if (envelope.ip) headers.set('ip', headerValue(envelope.ip))
  if (envelope.helo) headers.set('helo', headerValue(envelope.helo))
  if (envelope.rcpt) headers.set('rcpt', headerValue(envelope.rcpt))
  const url = new URL('checkv2', base.endsWith('/') ? base : `${base}/`)
  const res = await fetch(url, { method: 'POST', headers, body: new Uint8Array(raw), signal: AbortSignal.timeout(timeoutMs), redirect: 'error' })
  if (!res.ok) {
    await res.body?.cancel()
    throw new Error(`rspamd answered ${res.status}`)
  }
  return rspamdReason(await res.json())
}
