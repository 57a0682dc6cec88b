import { loadConfig } from '../config.ts'
import { createAdministration, type ExistingTokens } from '../plugins/administration.ts'
import { OPERATOR } from '../db/stores/audit.ts'
import { StoreError } from '../db/stores/errors.ts'
import { filterFromParams, inventoryPage, sortColumns } from '../db/stores/inventory-rules.ts'
import { MAX_TOKEN_DAYS, POLICY_NAMES, policyOf, type SitePolicy } from '../db/stores/site-policy.ts'
import { writeTokenRules } from '../db/values.ts'
import { createMailer } from '../lib/mailer.ts'
import { shown } from '../lib/terminal-text.ts'
import { createUrls } from '../lib/urls.ts'
import { admin, type Stores } from './admin.ts'
import { UsageError, type Command, type Io, type Values } from './command.ts'

// The operator's side of site administration (docs/decisions.md, "Site administrators"): who
// administers a site, its credentials inventory, and its token policy, through the same actions
// as the administration pages and the API (plugins/administration.ts).


const day = (date: Date | null) => (date ? date.toISOString().slice(0, 10) : '-')

/** The administration over a command's stores; its mail goes out when SERVICE_SMTP_URL is set. */
async function administrationOf(stores: Stores, values: Values, io: Io) {
  const config = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
  const mail = await createMailer(config.mail)
  const administration = createAdministration({
    sites: stores.sites,
    tokens: stores.tokens,
    oauth: stores.oauth,
    inventory: stores.inventory,
    securityLog: stores.securityLog,
    mail,
    urls: createUrls(config.baseUrl, config.siteUrl),
    clock: io.clock,
    onMailError: (error, to) => io.stderr(`service-desk: could not mail ${to}: ${(error as Error).message}\n`),
  })
  return { administration, close: () => mail.close() }
}

/** on or off, or a UsageError naming the option. */
function onOff(name: string, value: string | boolean | undefined): boolean | undefined {
  if (value === undefined) return undefined
  if (value === 'on' || value === 'off') return value === 'on'
  throw new UsageError(`--${name} must be on or off, not "${String(value)}"`)
}

/** The policy changes the options ask for. */
export function policyChanges(values: Values): Partial<SitePolicy> {
  const days = values['max-token-days']
  let tokenMaxDays: number | undefined
  if (days !== undefined) {
    tokenMaxDays = /^\d{1,4}$/.test(String(days)) ? Number(days) : NaN
    if (!(tokenMaxDays >= 1 && tokenMaxDays <= MAX_TOKEN_DAYS)) {
      throw new UsageError(`--max-token-days must be a whole number of days from 1 to ${MAX_TOKEN_DAYS}, not "${String(days)}"`)
    }
  }
  const writeTokens = values['write-tokens']
  if (writeTokens !== undefined && !(writeTokenRules as readonly unknown[]).includes(writeTokens)) {
    throw new UsageError(`--write-tokens must be ${writeTokenRules.join(' or ')}, not "${String(writeTokens)}"`)
  }
  return {
    tokenMaxDays,
    writeTokens: writeTokens as SitePolicy['writeTokens'] | undefined,
    legacyTokenOn: onOff('legacy-token', values['legacy-token']),
    multipassOn: onOff('multipass', values.multipass),
    passwordOn: onOff('password', values.password),
    staffSecondFactor: onOff('staff-second-factor', values['staff-second-factor']),
    visitorDiscussions: onOff('visitor-discussions', values['visitor-discussions']),
    publicDiscussions: onOff('public-discussions', values['public-discussions']),
    newDiscussionsToTeam: onOff('new-discussions-to-team', values['new-discussions-to-team']),
    satisfactionOn: onOff('satisfaction', values.satisfaction),
    companySignInOnly: onOff('company-sign-in-only', values['company-sign-in-only']),
  }
}

/** The policy as `site policy` prints it: one `name value` line per field. */
export function policyLines(policy: SitePolicy): string {
  const value = (v: unknown) => (v === true ? 'on' : v === false ? 'off' : String(v))
  return (Object.keys(POLICY_NAMES) as Array<keyof SitePolicy>).map((key) => `${POLICY_NAMES[key]}\t${value(policy[key])}\n`).join('')
}

const ON_OFF = { type: 'string', value: 'on|off' } as const

export const administrationCommands: Command[] = [
  ...(['admin', 'unadmin'] as const).map((verb) =>
    admin(
      {
        words: ['staff', verb],
        args: ['<site>', '<email>'],
        usage: `staff ${verb} <site> <email>`,
        summary:
          verb === 'admin'
            ? "Make a supporter an administrator of the site: its credentials inventory and token policy, on the pages and the API."
            : 'Make an administrator of the site a plain supporter again.',
      },
      async ({ sites, users, securityLog }, [permalink, email], _values, io) => {
        const site = await sites.get(permalink)
        const user = await users.get(email)
        const changed = await users.setAdministrator(site.id, user.id, verb === 'admin', OPERATOR)
        if (changed) await securityLog.append({ userId: user.id, siteId: site.id, kind: verb === 'admin' ? 'administrator_added' : 'administrator_removed', actor: 'cli' })
        const state = verb === 'admin' ? (changed ? 'now an administrator' : 'already an administrator') : changed ? 'no longer an administrator' : 'not an administrator'
        io.stdout(`${user.email} is ${state} of ${site.permalink}\n`)
      },
    ),
  ),
  admin(
    {
      words: ['credentials'],
      args: ['<site>'],
      options: {
        owner: { type: 'string', value: 'TEXT', about: 'only owners whose email holds this' },
        kind: { type: 'string', value: 'KIND', about: 'personal_token, oauth or legacy_token' },
        access: { type: 'string', value: 'read|write', about: 'only this access' },
        'unused-days': { type: 'string', value: 'N', about: 'only those not used for N days or more (never used counts)' },
        'expires-within': { type: 'string', value: 'N', about: 'only active ones ending within N days' },
        sort: { type: 'string', value: 'COLUMN', about: `${sortColumns.join(', ')}`, fallback: 'created, newest first' },
        desc: { type: 'boolean', about: 'sort the other way' },
        json: { type: 'boolean', about: 'one JSON array, for scripts' },
      },
      usage: 'credentials <site> [--owner TEXT] [--kind KIND] [--access read|write] [--unused-days N] [--expires-within N] [--sort COLUMN [--desc]] [--json]',
      summary: "The site's credentials inventory: personal tokens, applications and legacy tokens of its staff, active or ended in the last 30 days; one line each.",
      atomic: false,
    },
    async (stores, [permalink], values, io) => {
      const site = await stores.sites.get(permalink)
      const filter = filterFromParams({
        owner: values.owner,
        kind: values.kind,
        access: values.access,
        unused_days: values['unused-days'],
        expires_within_days: values['expires-within'],
        sort: values.sort,
        direction: values.sort === undefined && values.desc !== true ? undefined : values.desc === true ? 'desc' : 'asc',
      })
      for (const [option, asked, got] of [
        ['--kind', values.kind, filter.kind],
        ['--access', values.access, filter.access],
        ['--sort', values.sort, filter.sort],
        ['--unused-days', values['unused-days'], filter.unusedDays],
        ['--expires-within', values['expires-within'], filter.expiresWithinDays],
      ] as const) {
        if (asked !== undefined && got === undefined) throw new UsageError(`${option} does not take "${String(asked)}"; see service-desk credentials --help`)
      }
      const config = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
      const entries = await stores.inventory.list(site.id, createUrls(config.baseUrl, config.siteUrl).site(site.permalink))
      // Every one that passes, on one page.
      const listed = inventoryPage(entries, filter, io.clock(), Number.POSITIVE_INFINITY).entries
      if (values.json === true) {
        io.stdout(`${JSON.stringify(listed)}\n`)
        return
      }
      for (const e of listed) {
        const fields = [e.id, e.owner, e.kind, e.name, e.access, `created ${day(e.createdAt)}`, `last used ${day(e.lastUsedAt)}`, `expires ${day(e.expiresAt)}`, e.state]
        io.stdout(`${fields.map((field) => shown(String(field))).join('\t')}\n`)
      }
    },
  ),
  admin(
    {
      words: ['site', 'policy'],
      args: ['<site>'],
      options: {
        'max-token-days': { type: 'string', value: 'N', about: `the longest lifetime of a new personal token, 1 to ${MAX_TOKEN_DAYS}` },
        'write-tokens': { type: 'string', value: writeTokenRules.join('|'), about: 'who may create Read and write tokens' },
        'legacy-token': { ...ON_OFF, about: 'whether the API accepts the legacy account token' },
        multipass: { ...ON_OFF, about: 'whether the API accepts multipass' },
        password: { ...ON_OFF, about: 'whether the API accepts email and password (Basic)' },
        'staff-second-factor': { ...ON_OFF, about: 'whether the support staff must have a second factor (until they add one, signing in leads only to adding one)' },
        'visitor-discussions': { ...ON_OFF, about: "whether a visitor who is not signed in may start a discussion on the customer's pages (posted once the mailed link is followed)" },
        'public-discussions': { ...ON_OFF, about: "whether the customer's pages show the site's public discussions" },
        'new-discussions-to-team': { ...ON_OFF, about: 'whether a supporter who has not chosen on their profile is mailed about every new discussion' },
        satisfaction: { ...ON_OFF, about: 'whether customers are asked to rate each resolved discussion' },
        'company-sign-in-only': { ...ON_OFF, about: "whether the support staff sign in with the company's account only (`sign-in-provider`); off is the way back in if the provider fails" },
        shorten: { type: 'boolean', about: 'shorten the active tokens over a shorter lifetime to end within it (owners mailed)' },
        leave: { type: 'boolean', about: 'leave the active tokens over a shorter lifetime as they are' },
      },
      usage: 'site policy <site> [--max-token-days N [--shorten | --leave]] [--write-tokens everyone|administrators] [--legacy-token on|off] [--multipass on|off] [--password on|off] [--staff-second-factor on|off] [--visitor-discussions on|off] [--public-discussions on|off] [--new-discussions-to-team on|off] [--satisfaction on|off] [--company-sign-in-only on|off]',
      summary:
        "Print the site's token policy; the options change it. A shorter lifetime that leaves active tokens over it is refused with their count until --shorten or --leave says what happens to them.",
      atomic: false,
    },
    async (stores, [permalink], values, io) => {
      if (values.shorten === true && values.leave === true) throw new UsageError('--shorten and --leave cannot be combined')
      const changes = policyChanges(values)
      const site = await stores.sites.get(permalink)
      if (Object.values(changes).every((value) => value === undefined)) {
        io.stdout(policyLines(policyOf(site)))
        return
      }
      const existing: ExistingTokens | undefined = values.shorten === true ? 'shorten' : values.leave === true ? 'leave' : undefined
      const { administration, close } = await administrationOf(stores, values, io)
      try {
        const { after, shortened, leftOver } = await administration.setPolicy(site, changes, existing, OPERATOR)
        io.stdout(policyLines(after))
        if (shortened > 0) io.stderr(`${shortened} token${shortened === 1 ? '' : 's'} shortened to end within ${after.tokenMaxDays} days\n`)
        if (leftOver > 0) io.stderr(`${leftOver} token${leftOver === 1 ? '' : 's'} left lasting longer than ${after.tokenMaxDays} days\n`)
      } catch (error) {
        if (error instanceof StoreError && error.field === 'existing_tokens') throw new UsageError(`${error.message} (--shorten or --leave)`)
        throw error
      } finally {
        close()
      }
    },
  ),
]
