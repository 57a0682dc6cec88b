import { existsSync } from 'node:fs'
import { OPERATOR } from '../db/stores/audit.ts'
import { resolve } from 'node:path'
import { loadConfig, type Config } from '../config.ts'
import type { Engine, EngineStores } from '../db/engine.ts'
import type { MailStore } from '../db/stores/mail.ts'
import { createEventSink, type EventSink, type WebhookStore } from '../db/stores/webhooks.ts'
import type { SenderStore } from '../db/stores/senders.ts'
import type { InvitationStore } from '../db/stores/invitations.ts'
import { createUrls, type Urls } from '../lib/urls.ts'
import { eventRender } from '../routes/api/webhook-events.ts'
import { openEngine } from '../db/open.ts'
import type { PgDb } from '../db/postgres/client.ts'
import type { Access } from '../db/values.ts'
import type { Clock } from '../lib/clock.ts'
import type { ScheduleStore } from '../db/stores/schedules.ts'
import type { ReportStore } from '../db/stores/reports.ts'
import type { FieldStore } from '../db/stores/fields.ts'
import type { SignInProviderStore } from '../db/stores/sign-in-providers.ts'
import type { ErasureStore } from '../db/stores/erasure.ts'
import type { CustomerDataStore } from '../db/stores/customer-data.ts'
import type { FileStore } from '../db/stores/files.ts'
import type { SlaPolicyStore } from '../db/stores/sla-policies.ts'
import { isPostgresAddress } from '../lib/database-address.ts'
import { hashPassword, randomPassword } from '../lib/password.ts'
import { createSecretBox, type SecretBox } from '../lib/secret-box.ts'
import { serverSecret } from '../lib/server-key.ts'
import { maskedToken } from '../lib/token-format.ts'
import { endGrants } from '../plugins/oauth/adapter.ts'
import { shown } from '../lib/terminal-text.ts'
import { tokenDetail, type SecurityLogStore } from '../db/stores/security-log.ts'
import type { CategoryStore } from '../db/stores/categories.ts'
import type { OAuthStore } from '../db/stores/oauth.ts'
import type { CredentialInventory } from '../db/stores/credential-inventory.ts'
import { StoreError } from '../db/stores/errors.ts'
import type { SessionStore } from '../db/stores/sessions.ts'
import type { SiteStore } from '../db/stores/sites.ts'
import { DEFAULT_EXPIRY_DAYS, EXPIRY_DAYS, tokenState } from '../db/stores/token-rules.ts'
import { MAX_TOKEN_DAYS } from '../db/stores/site-policy.ts'
import type { TokenStore } from '../db/stores/tokens.ts'
import { MIN_PASSWORD, type UserStore } from '../db/stores/users.ts'
import { MAX_SECOND_STEP_FAILURES, type SecondFactorStore } from '../db/stores/second-factors.ts'
import { DB_OPTION, UsageError, type Command, type Io, type Options, type Values } from './command.ts'

/** The database of a command: its engine and, on PostgreSQL, the pool under it. */
export interface CommandDatabase {
  /** The database; its `sqlite` side only for what SQLite alone has (the transaction below, seeding). */
  engine: Engine
  /** PostgreSQL's pool, for what needs more than the stores' calls one by one (a transaction, seeding); undefined on SQLite. */
  postgres: PgDb | undefined
}

/** What an administration command works with: the stores its database's engine builds. */
export interface Stores extends CommandDatabase {
  /** The server key's box, which seals the legacy tokens. */
  box: SecretBox
  sites: SiteStore
  users: UserStore
  tokens: TokenStore
  sessions: SessionStore
  categories: CategoryStore
  securityLog: SecurityLogStore
  /** oidc-provider's records: a person's grants end when they leave the staff or are disabled. */
  oauth: OAuthStore
  inventory: CredentialInventory
  /** The accounts' second factors: an operator lets stopped codes work again. */
  secondFactors: SecondFactorStore
  /** The sites' mailboxes (cli/mailboxes.ts). */
  mailboxes: MailStore
  /** The sites' webhooks (cli/webhooks.ts). */
  webhooks: WebhookStore
  /** What the sites say of senders: allowed, or blocked as spam (cli/senders.ts). */
  senders: SenderStore
  /** Invitations to the sites' staff (cli/invitations.ts). */
  invitations: InvitationStore
  /** The sites' business hours (cli/schedules.ts). */
  schedules: ScheduleStore
  /** The sites' SLA policies (cli/sla.ts). */
  slaPolicies: SlaPolicyStore
  /** The sites' reports (cli/reports.ts). */
  reports: ReportStore
  /** The sites' custom fields (cli/fields.ts). */
  fields: FieldStore
  /** The sites' identity providers for their staff (cli/sign-in-providers.ts). */
  signInProviders: SignInProviderStore
  /** What a site holds of one customer (cli/customers.ts). */
  customerData: CustomerDataStore
  /** A customer's erasure and the sites' privacy settings (cli/customers.ts). */
  erasure: ErasureStore
  /** The sites' files, read piece by piece for an export. */
  files: FileStore
  /** What the stores tell the sites' webhooks of, as the server does (a token revoked here is told too). */
  events: EventSink
  /** The service's public addresses, as the server makes them (a provider's redirect address, say). */
  urls: Urls
}

/**
 * Whether the database is a SQLite file not made yet, which only a command that may create it
 * (serve, migrate, site add) goes on with: any other refuses it, before anything is written. A
 * mistyped --db would otherwise leave an empty database and a key file under the typo, and a
 * listing of it print nothing.
 */
export function isNewSqliteFile(databaseAddress: string, { creates }: { creates: boolean }): boolean {
  if (isPostgresAddress(databaseAddress) || existsSync(databaseAddress)) return false
  if (!creates) throw new UsageError(`there is no database at ${databaseAddress} (${resolve(databaseAddress)}): check --db or SERVICE_DB; nothing was created`)
  return true
}

/**
 * The check of a command's database file before it is opened: a command that may make it says on
 * standard error that it does; any other refuses a file that is not there (isNewSqliteFile).
 */
export function checkDatabaseFile(databaseAddress: string, io: Pick<Io, 'stderr'>, creates: boolean): void {
  if (isNewSqliteFile(databaseAddress, { creates })) io.stderr(`service-desk: made a new database at ${databaseAddress}\n`)
}

/**
 * Opens (creating and migrating when needed) the database of SERVICE_DB or --db: a SQLite file
 * through openEngine (db/open.ts); a postgres:// address the same way, by cli/postgres.ts (loaded
 * only then), which keeps the pool under the engine for the command's transaction.
 */
export async function openCommandDatabase(config: Pick<Config, 'databaseAddress' | 'postgres'>): Promise<CommandDatabase> {
  if (!isPostgresAddress(config.databaseAddress)) return { engine: await openEngine(config.databaseAddress), postgres: undefined }
  const { openPostgresCommand } = await import('./postgres.ts')
  const { engine, db } = await openPostgresCommand(config.databaseAddress, config.postgres)
  return { engine, postgres: db }
}

async function openStores(values: Values, io: Io, creates: boolean): Promise<Stores> {
  const config = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
  checkDatabaseFile(config.databaseAddress, io, creates)
  // The same server key as the server's, so legacy tokens made here can be shown there and back.
  const box = createSecretBox(serverSecret({ secret: config.secret, databaseAddress: config.databaseAddress }))
  const { engine, postgres } = await openCommandDatabase(config)
  const urls = createUrls(config.baseUrl, config.siteUrl)
  const events = createEventSink(io.clock, eventRender(urls))
  return { engine, postgres, box, events, urls, ...storesOf(engine, io.clock, box, events, urls) }
}

/** The stores a command works with, from the engine or from one of its transactions. */
function storesOf(stores: EngineStores, clock: Clock, box: SecretBox, events: EventSink, urls: Urls) {
  return {
    sites: stores.sites(clock),
    users: stores.users(clock, box),
    tokens: stores.tokens(clock, undefined, events),
    sessions: stores.sessions(clock),
    categories: stores.categories(clock),
    securityLog: stores.securityLog(clock),
    oauth: stores.oauth(clock),
    inventory: stores.inventory(clock),
    secondFactors: stores.secondFactors(clock, box),
    mailboxes: stores.mail(clock, box),
    webhooks: stores.webhooks(clock, box),
    senders: stores.senders(clock),
    invitations: stores.invitations(clock, box),
    schedules: stores.schedules(clock),
    slaPolicies: stores.slaPolicies(clock),
    fields: stores.fields(clock),
    signInProviders: stores.signInProviders(clock, box),
    customerData: stores.customerData(clock),
    erasure: stores.erasure(clock, box, events),
    files: stores.files(clock),
    reports: stores.reports(clock, (permalink) => urls.siteWeb(permalink)),
  }
}

/**
 * Runs a command's writes in one transaction and holds back what it prints until that commits. So
 * a command that stops, refused or on a fault (a full disk, a locked file, a lost connection),
 * changed nothing and printed nothing but its error; and a write whose commit fails says so.
 * `run` gets stores built over the transaction (Engine.atomic): their own transactions become
 * savepoints inside it.
 */
async function atomically(stores: Stores, io: Io, run: (stores: Stores, io: Io) => void | Promise<void>) {
  let out = ''
  let err = ''
  const held: Io = { ...io, stdout: (text) => void (out += text), stderr: (text) => void (err += text) }
  await stores.engine.atomic(async (inside) => run({ ...stores, ...storesOf(inside, io.clock, stores.box, stores.events, stores.urls) }, held))
  io.stdout(out)
  if (err) io.stderr(err)
}

/**
 * An administration command: opens the database, runs in one transaction (atomically, above),
 * closes it, and exits 0 unless refused. `atomic: false` for a command that only reads, or writes
 * in transactions of its own (seed, in batches; user add, after the slow password hash);
 * `creates: true` for one that may make the database (site add).
 */
export function admin(
  { atomic = true, creates = false, ...spec }: Omit<Command, 'run' | 'options'> & { options?: Options; atomic?: boolean; creates?: boolean },
  run: (stores: Stores, args: string[], values: Values, io: Io) => void | Promise<void>,
): Command {
  return {
    ...spec,
    options: { ...spec.options, ...DB_OPTION },
    async run(args, values, io) {
      const stores = await openStores(values, io, creates)
      try {
        if (atomic) await atomically(stores, io, (inside, held) => run(inside, args, values, held))
        else await run(stores, args, values, io)
        return 0
      } finally {
        await stores.engine.close()
      }
    },
  }
}

const authorizationsEnded = (n: number) => (n === 0 ? '' : `; ${n} authorized application${n === 1 ? '' : 's'} ended`)

const day = (date: Date | null) => (date ? date.toISOString().slice(0, 10) : 'never')

/** The category a new site is made with. */
export const FIRST_CATEGORY = 'General'

async function readPassword(io: Io): Promise<string> {
  // One trailing newline is what `echo` and here-strings add; it is not part of the password.
  const password = (await io.readStdin()).replace(/\r?\n$/, '')
  if (password.length < MIN_PASSWORD) throw new StoreError(`a password must be at least ${MIN_PASSWORD} characters`, 'invalid')
  return password
}

/**
 * The password of `user add` and `user set-password`: read from standard input with
 * --password-stdin (`given`), else a random one to print once; and its hash, made before the
 * command's transaction takes the write lock.
 */
async function newPassword(values: Values, io: Io): Promise<{ given: boolean; password: string; passwordHash: string }> {
  const given = values['password-stdin'] === true
  const password = given ? await readPassword(io) : randomPassword()
  return { given, password, passwordHash: await hashPassword(password) }
}

function parseAccess(value: string | boolean | undefined): Access {
  if (value === undefined || value === 'read') return 'read'
  if (value === 'write') return 'write'
  throw new UsageError(`--access must be read or write, not "${value}"`)
}

function parseExpiry(value: string | boolean | undefined): number {
  if (value === undefined) return DEFAULT_EXPIRY_DAYS
  const days = Number(value)
  // Which lifetimes the site allows is its token policy's, which the store checks.
  if (!/^\d+$/.test(String(value)) || days < 1 || days > MAX_TOKEN_DAYS) {
    throw new UsageError(`--expires must be one of ${EXPIRY_DAYS.join(', ')} (days), or what the site's token policy allows, not "${value}"`)
  }
  return days
}

function parseId(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value)) throw new UsageError(`a token id is a positive whole number, not "${value}"`)
  return Number(value)
}

export const adminCommands: Command[] = [
  admin(
    {
      words: ['site', 'add'],
      args: ['<site>'],
      options: { name: { type: 'string', value: 'TEXT', about: 'the name shown on its pages', fallback: 'the permalink' } },
      usage: 'site add <site> [--name TEXT]',
      summary: 'Create a site, with a first category, General, ready for its first discussion; <site> is its permalink in every path. Makes the database if there is none yet.',
      creates: true,
    },
    async ({ sites, categories }, [permalink], values, io) => {
      const site = await sites.add(permalink, values.name as string | undefined)
      // A discussion lives in a category: without one, the first one the API is sent is refused.
      const first = await categories.add(site.id, FIRST_CATEGORY, false)
      io.stdout(`site ${site.permalink} created ("${shown(site.name)}") with the category ${first.name} (id ${first.id}); add more with: service-desk category add ${site.permalink} NAME\n`)
    },
  ),
  admin(
    { words: ['site', 'list'], args: [], usage: 'site list', summary: 'List the sites.', atomic: false },
    async ({ sites }, _args, _values, io) => {
      for (const site of await sites.list()) io.stdout(`${site.permalink}\t${shown(site.name)}\n`)
    },
  ),
  admin(
    {
      words: ['user', 'add'],
      args: ['<email>'],
      options: {
        name: { type: 'string', value: 'TEXT', about: 'the name shown to customers and colleagues', fallback: 'the part of the email before @' },
        'password-stdin': { type: 'boolean', about: 'read the password from standard input (one line) instead of making a random one' },
      },
      usage: 'user add <email> [--name TEXT] [--password-stdin]',
      summary: 'Create an account. Without --password-stdin a random password is made and printed once.',
      // Standard input and the slow hash are waited for before the write lock is taken.
      atomic: false,
    },
    async (stores, [email], values, io) => {
      const { given, password, passwordHash } = await newPassword(values, io)
      // The write alone in the transaction; what it prints waits for the commit.
      await atomically(stores, io, async ({ users }, held) => {
        const user = await users.insert({ email, name: values.name as string | undefined, password }, passwordHash)
        held.stdout(given ? `user ${user.email} created\n` : `user ${user.email} created; password: ${password}\n`)
      })
    },
  ),
  admin(
    {
      words: ['user', 'set-password'],
      args: ['<email>'],
      options: { 'password-stdin': { type: 'boolean', about: 'read the new password from standard input (one line) instead of making a random one' } },
      usage: 'user set-password <email> [--password-stdin]',
      summary:
        "Give an account a new password (a lost one, say) and end its web sessions; its tokens keep working. Without --password-stdin a random one is made and printed once.",
      // Standard input and the slow hash are waited for before the write lock is taken.
      atomic: false,
    },
    async (stores, [email], values, io) => {
      const { given, password, passwordHash } = await newPassword(values, io)
      await atomically(stores, io, async ({ users, sessions, securityLog }, held) => {
        const user = await users.setPassword(email, passwordHash)
        const ended = await sessions.destroyForUser(user.id)
        await securityLog.append({ userId: user.id, kind: 'password_set', actor: 'cli' })
        const sessionsEnded = `${ended} web session${ended === 1 ? '' : 's'} ended`
        held.stdout(given ? `password of ${user.email} set; ${sessionsEnded}\n` : `password of ${user.email} set to ${password} (shown once); ${sessionsEnded}\n`)
      })
    },
  ),
  admin(
    {
      words: ['user', 'unlock-codes'],
      args: ['<email>'],
      usage: 'user unlock-codes <email>',
      summary: `Let an account's authenticator codes and recovery codes work again, stopped after ${MAX_SECOND_STEP_FAILURES} wrong ones in a row (a passkey of the account unlocks them too). Check first that it is the person who asks.`,
    },
    async ({ users, secondFactors, securityLog }, [email], _values, io) => {
      const user = await users.get(email)
      const cleared = await secondFactors.clearFailedCodes(user.id)
      if (cleared) await securityLog.append({ userId: user.id, kind: 'codes_unlocked', actor: 'cli' })
      io.stdout(cleared ? `the codes of ${user.email} work again\n` : `the codes of ${user.email} were not stopped; nothing to do\n`)
    },
  ),
  ...(['disable', 'enable'] as const).map((verb) =>
    admin(
      {
        words: ['user', verb],
        args: ['<email>'],
        usage: `user ${verb} <email>`,
        summary:
          verb === 'disable'
            ? 'Disable an account: its tokens stop working and its web sessions end at once.'
            : 'Enable a disabled account again.',
      },
      async ({ users, sessions, securityLog, oauth }, [email], _values, io) => {
        const user = await users.setDisabled(email, verb === 'disable')
        let ended = ''
        if (verb === 'disable') {
          await sessions.destroyForUser(user.id)
          // Enabled again, the account's applications need a new consent.
          ended = authorizationsEnded(await endGrants(oauth, user.id))
          await securityLog.append({ userId: user.id, kind: 'account_disabled', actor: 'cli' })
        }
        io.stdout(`user ${user.email} ${verb}d${ended}\n`)
      },
    ),
  ),
  admin(
    {
      words: ['staff', 'add'],
      args: ['<site>', '<email>'],
      options: { admin: { type: 'boolean', about: 'also make them an administrator of the site (staff admin)' } },
      usage: 'staff add <site> <email> [--admin]',
      summary: "Make a user a member of a site's support staff; --admin, its administrator too.",
    },
    async ({ sites, users, securityLog }, [permalink, email], values, io) => {
      const site = await sites.get(permalink)
      const user = await users.find(email)
      if (!user) throw new StoreError(`there is no user "${email}"; make the account first: service-desk user add ${email}`, 'not_found', 'email')
      const administrator = values.admin === true
      await users.addStaff(site.id, user.id, { administrator, by: OPERATOR })
      await securityLog.append({ userId: user.id, siteId: site.id, kind: 'staff_added', actor: 'cli' })
      if (administrator) await securityLog.append({ userId: user.id, siteId: site.id, kind: 'administrator_added', actor: 'cli' })
      io.stdout(`${user.email} is now support staff${administrator ? ' and an administrator' : ''} of ${site.permalink}\n`)
    },
  ),
  admin(
    {
      words: ['staff', 'remove'],
      args: ['<site>', '<email>'],
      usage: 'staff remove <site> <email>',
      summary: 'Take a user off the support staff (they stay a customer); their tokens for the site stop working.',
    },
    async ({ sites, users, securityLog, oauth }, [permalink, email], _values, io) => {
      const site = await sites.get(permalink)
      const user = await users.get(email)
      if (!(await users.removeStaff(site.id, user.id, { by: OPERATOR }))) {
        throw new StoreError(`${user.email} is not support staff of ${site.permalink}`, 'not_found')
      }
      // Back on the staff, the person's applications need a new consent.
      const ended = authorizationsEnded(await endGrants(oauth, user.id, site.permalink))
      await securityLog.append({ userId: user.id, siteId: site.id, kind: 'staff_removed', actor: 'cli' })
      io.stdout(`${user.email} is no longer support staff of ${site.permalink}${ended}\n`)
    },
  ),
  admin(
    {
      words: ['token', 'create'],
      args: ['<site>', '<email>'],
      options: {
        name: { type: 'string', value: 'TEXT', about: 'what the token is for, as its owner will see it on the token page (required)' },
        access: { type: 'string', value: 'read|write', about: 'read only, or read and write', fallback: 'read' },
        expires: { type: 'string', value: 'DAYS', about: `days until it expires: ${EXPIRY_DAYS.join(', ')}`, fallback: String(DEFAULT_EXPIRY_DAYS) },
      },
      usage: 'token create <site> <email> --name TEXT [--access read|write] [--expires 7|30|90|365]',
      summary: 'Create a personal API token and print its value alone (shown this once).',
    },
    async ({ sites, users, tokens, securityLog }, [permalink, email], values, io) => {
      if (typeof values.name !== 'string') throw new UsageError('--name is required: say what the token is for')
      const access = parseAccess(values.access)
      const expiresInDays = parseExpiry(values.expires)
      const site = await sites.get(permalink)
      const user = await users.get(email)
      const { value, token } = await tokens.create({ siteId: site.id, userId: user.id, name: values.name, access, expiresInDays })
      await securityLog.append({ userId: user.id, siteId: site.id, kind: 'token_created', actor: 'cli', detail: tokenDetail(token) })
      io.stdout(`${value}\n`)
    },
  ),
  admin(
    {
      words: ['token', 'list'],
      args: ['<site>', '<email>'],
      optionalArgs: 1,
      usage: 'token list <site> [<email>]',
      summary: 'One line per token: id, owner, name, access, end of value, created, last used, expires, state.',
      atomic: false,
    },
    async ({ sites, users, tokens }, [permalink, email], _values, io) => {
      const site = await sites.get(permalink)
      const userId = email === undefined ? undefined : (await users.get(email)).id
      const now = io.clock()
      for (const t of await tokens.listForSite(site.id, userId)) {
        const fields = [t.id, t.email, t.name, t.access, maskedToken(t.lastFour), `created ${day(t.createdAt)}`]
        fields.push(`last used ${day(t.lastUsedAt)}`, `expires ${day(t.expiresAt)}`, tokenState(t, now))
        io.stdout(`${fields.map((field) => shown(String(field))).join('\t')}\n`)
      }
    },
  ),
  admin(
    { words: ['token', 'revoke'], args: ['<site>', '<id>'], usage: 'token revoke <site> <id>', summary: 'Revoke a token by the id token list shows; it stops working at once.' },
    async ({ sites, tokens, securityLog }, [permalink, id], _values, io) => {
      const site = await sites.get(permalink)
      const token = await tokens.revoke(site.id, parseId(id))
      await securityLog.append({ userId: token.userId, siteId: site.id, kind: 'token_revoked', actor: 'cli', detail: tokenDetail(token) })
      io.stdout(`token ${token.id} (${shown(token.name)}) revoked\n`)
    },
  ),
]
