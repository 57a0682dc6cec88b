import { and, asc, eq, isNull, like, lt, or } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { isMailAddress, normalAddress } from '../../lib/mail.ts'
import { serverAddress, type MailTokens, type ProviderSettings } from '../../lib/mail-oauth.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { wakeWaiting, type OutboxMail } from './outbox.ts'
import { siteAdministrators } from './staff.ts'

// Mailboxes connected with OAuth (docs/decisions.md, "Mailboxes connected with OAuth"), part of
// the mail store (db/stores/mail.ts): the applications the operator registered at providers, a
// mailbox connected (or connected again) with the tokens an administrator's sign-in gave, and
// their renewal, one process at a time, until the provider refuses it.

export type MailProviderRow = Tables['mailProviders']['$inferSelect']

/** A registered application, its settings opened (null: sealed under another server key). */
export interface MailProvider {
  name: string
  label: string
  issuer: string
  settings: ProviderSettings | null
  createdAt: Date
}

/** A mailbox as an administrator's sign-in at a provider connected it. */
export interface Connection {
  provider: string
  /** The account signed in at the provider: the mailbox, and the SMTP user. */
  address: string
  /** A shared mailbox that account may read and send as (Microsoft 365): the mailbox and its IMAP user instead. */
  shared?: string | null
  settings: ProviderSettings
  tokens: MailTokens
  categoryId?: number | null
  acknowledge?: boolean
}

export function mailConnectionMethods(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { categories, mailboxes, mailProviders, outbox, sites } } = port
  const opened = (row: MailProviderRow): MailProvider => {
    const plain = box.open(row.settings)
    return { name: row.name, label: row.label, issuer: row.issuer, settings: plain === null ? null : (JSON.parse(plain) as ProviderSettings), createdAt: row.createdAt }
  }

  return {
    /** Registers an application at a provider under a name of the operator's; a name taken is a StoreError (conflict). */
    async addProvider(name: string, label: string, settings: ProviderSettings): Promise<MailProvider> {
      const [row] = await db.insert(mailProviders).values({ name, label, issuer: settings.issuer, settings: box.seal(JSON.stringify(settings)), createdAt: new Date(clock()) }).onConflictDoNothing().returning()
      if (!row) throw new StoreError(`a mail provider named ${name} is registered already: remove it first`, 'conflict', 'name')
      return opened(row)
    },

    /** The registered applications, in the order they were added. */
    async providers(): Promise<MailProvider[]> {
      return (await db.select().from(mailProviders).orderBy(asc(mailProviders.id))).map(opened)
    },

    /** The registered application of a name, if any. */
    async provider(name: string): Promise<MailProvider | undefined> {
      const [row] = await db.select().from(mailProviders).where(eq(mailProviders.name, name))
      return row && opened(row)
    },

    /**
     * A registered application's new client secret (the old one ends at the provider): the
     * addresses of its mailboxes the old secret's end had stopped (the provider refused it as
     * invalid_client), which go on now; undefined when no application has the name.
     */
    async setProviderSecret(name: string, clientSecret: string): Promise<string[] | undefined> {
      return port.atomic(async (tx) => {
        const [row] = await tx.db.select().from(mailProviders).where(eq(mailProviders.name, name))
        const settings = row && opened(row).settings
        if (!settings) return undefined
        await tx.db.update(mailProviders).set({ settings: box.seal(JSON.stringify({ ...settings, clientSecret })) }).where(eq(mailProviders.id, row.id))
        const resumed = await tx.db
          .update(mailboxes)
          .set({ oauthProblem: null })
          .where(and(eq(mailboxes.oauthProvider, name), like(mailboxes.oauthProblem, '%(invalid_client%')))
          .returning({ address: mailboxes.address })
        return resumed.map((m) => m.address)
      })
    },

    /** Removes a registered application; a StoreError (conflict) while mailboxes sign in through it. */
    async removeProvider(name: string): Promise<boolean> {
      return port.atomic(async (tx) => {
        const using = await tx.db.select({ address: mailboxes.address }).from(mailboxes).where(eq(mailboxes.oauthProvider, name)).orderBy(asc(mailboxes.id))
        if (using.length > 0) throw new StoreError(`mailboxes sign in through ${name}: ${using.map((m) => m.address).join(', ')}; remove them first`, 'conflict', 'name')
        const gone = await tx.db.delete(mailProviders).where(eq(mailProviders.name, name)).returning({ id: mailProviders.id })
        return gone.length > 0
      })
    },

    /**
     * A mailbox of the site signing in with the tokens of an administrator's sign-in at a provider:
     * made, or, when the site has the address already (connected before, or signing in with a
     * password), connected again, where its fetch's place is kept. Another site's address is a
     * StoreError (conflict). Its IMAP and SMTP servers are the provider's, the user its address.
     */
    async connectMailbox(siteId: number, connection: Connection, by?: Actor): Promise<{ id: number; address: string; again: boolean }> {
      const account = normalAddress(connection.address)
      const address = connection.shared ? normalAddress(connection.shared) : account
      if (!isMailAddress(address)) throw new StoreError(`"${connection.shared}" is not a mail address`, 'invalid', 'shared')
      const { imap, smtp } = connection.settings
      const sealed = {
        imap: box.seal(JSON.stringify({ host: imap.host, port: imap.port, secure: imap.secure, user: address, password: '', folder: 'INBOX' })),
        // SMTP signs in as the account, which sends as the shared mailbox (its From).
        smtp: box.seal(serverAddress(smtp, 'smtp').replace('://', `://${encodeURIComponent(account)}@`)),
        oauthProvider: connection.provider,
        oauthTokens: box.seal(JSON.stringify(connection.tokens)),
        oauthProblem: null,
        oauthRenewUntil: null,
      }
      return port.atomic(async (tx) => {
        const [known] = await tx.db.select({ id: mailboxes.id, siteId: mailboxes.siteId }).from(mailboxes).where(eq(mailboxes.address, address))
        if (known && known.siteId !== siteId) throw new StoreError(`${address} is already the address of a mailbox`, 'conflict', 'address')
        await recordChange(tx, clock, by, siteId, 'mailbox.connected', address, { provider: connection.provider, signed_in_as: account, again: known !== undefined })
        // What waited for a way out (no SMTP address, or this mailbox unable to sign in) is looked at again now.
        await wakeWaiting(tx, clock, siteId)
        if (known) {
          await tx.db.update(mailboxes).set({ ...sealed, lastError: null }).where(eq(mailboxes.id, known.id))
          return { id: known.id, address, again: true }
        }
        const { categoryId = null, acknowledge = false } = connection
        if (categoryId !== null) {
          const [category] = await tx.db.select({ id: categories.id }).from(categories).where(and(eq(categories.id, categoryId), eq(categories.siteId, siteId)))
          if (!category) throw new StoreError(`there is no category ${categoryId} on this site`, 'not_found', 'category')
        }
        const [first] = categoryId === null ? await tx.db.select({ id: categories.id }).from(categories).where(eq(categories.siteId, siteId)).orderBy(asc(categories.id)).limit(1) : []
        const [row] = await tx.db
          .insert(mailboxes)
          .values({ siteId, address, categoryId: categoryId ?? first?.id ?? null, acknowledge, createdAt: new Date(clock()), ...sealed })
          .returning({ id: mailboxes.id })
        return { id: row!.id, address, again: false }
      })
    },

    /** A connected mailbox's tokens, opened; null when it is not connected (or sealed under another key). */
    async tokensOf(mailbox: { oauthTokens: string | null }): Promise<MailTokens | null> {
      const plain = mailbox.oauthTokens && box.open(mailbox.oauthTokens)
      return plain ? (JSON.parse(plain) as MailTokens) : null
    },

    /**
     * Takes the renewal of a mailbox's tokens for `ms`, when no other process renews them now and
     * the provider has not refused: whether this process renews them. One renewal at a time, so a
     * provider that rotates refresh tokens never sees the old one used twice.
     */
    async claimRenewal(id: number, ms: number): Promise<Date | undefined> {
      const now = new Date(clock())
      const until = new Date(now.getTime() + ms)
      const claimed = await db
        .update(mailboxes)
        .set({ oauthRenewUntil: until })
        .where(and(eq(mailboxes.id, id), isNull(mailboxes.oauthProblem), or(isNull(mailboxes.oauthRenewUntil), lt(mailboxes.oauthRenewUntil, now))))
        .returning({ id: mailboxes.id })
      return claimed.length > 0 ? until : undefined
    },

    /**
     * The renewal under `claim` ended: the new tokens kept (none: it failed for a while, and the
     * next use tries again). Nothing is written when the claim is no longer there (it ran out and
     * another process took it, or the mailbox was connected again meanwhile): false.
     */
    async renewed(id: number, claim: Date, tokens: MailTokens | null): Promise<boolean> {
      const done = await db
        .update(mailboxes)
        .set({ oauthRenewUntil: null, ...(tokens && { oauthTokens: box.seal(JSON.stringify(tokens)) }) })
        .where(and(eq(mailboxes.id, id), eq(mailboxes.oauthRenewUntil, claim)))
        .returning({ id: mailboxes.id })
      return done.length > 0
    },

    /**
     * The provider refused to renew the tokens (under `claim`): the mailbox says why (its page, the API, `mailbox
     * list`) until it is connected again, and its site's administrators are mailed, once, in the
     * same transaction; false when it was said already.
     */
    async renewalRefused(id: number, claim: Date, words: string, mail: (to: string, mailbox: { address: string; permalink: string; siteName: string }) => OutboxMail): Promise<boolean> {
      return port.atomic(async (tx) => {
        // Under the claim only: a mailbox connected again meanwhile has a new grant the refusal is not about.
        const [row] = await tx.db
          .update(mailboxes)
          .set({ oauthProblem: words.slice(0, 500), oauthRenewUntil: null })
          .where(and(eq(mailboxes.id, id), isNull(mailboxes.oauthProblem), eq(mailboxes.oauthRenewUntil, claim)))
          .returning({ siteId: mailboxes.siteId, address: mailboxes.address })
        if (!row) return false
        const at = new Date(clock())
        const [site] = await tx.db.select({ permalink: sites.permalink, name: sites.name }).from(sites).where(eq(sites.id, row.siteId))
        const about = { address: row.address, permalink: site!.permalink, siteName: site!.name }
        const administrators = await siteAdministrators(tx, row.siteId)
        if (administrators.length > 0) {
          await tx.db.insert(outbox).values(administrators.map(({ email }) => ({ siteId: row.siteId, kind: 'mailbox_problem' as const, payload: JSON.stringify(mail(email, about)), nextAttemptAt: at, createdAt: at })))
        }
        return true
      })
    },
  }
}
