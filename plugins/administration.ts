import fp from 'fastify-plugin'
import type { CredentialInventory } from '../db/stores/credential-inventory.ts'
import { StoreError } from '../db/stores/errors.ts'
import { checkReason, inventoryPage, revocationTargets, type InventoryEntry, type InventoryFilter } from '../db/stores/inventory-rules.ts'
import type { OAuthStore } from '../db/stores/oauth.ts'
import { tokenDetail, type SecurityLogStore } from '../db/stores/security-log.ts'
import { changedPolicy, policyDifference, policyOf, type SitePolicy } from '../db/stores/site-policy.ts'
import type { Site, SiteStore } from '../db/stores/sites.ts'
import type { ShortenedToken, TokenStore } from '../db/stores/tokens.ts'
import { shownMoment, type Clock } from '../lib/clock.ts'
import type { Mailer } from '../lib/mailer.ts'
import type { Urls } from '../lib/urls.ts'

// What a site's administrators do (docs/decisions.md, "Site administrators"), written once for the
// three doors: the administration pages, the v1 API and the command line. Each action is checked
// whole before anything changes, recorded in the security log (who, what, before and after, the
// reason), and told by mail to each person whose credentials it touched, when mail is set up.
// Who may act is the door's to check (an administrator of the site, or the operator); a page
// that asks for a fresh sign-in before these actions wraps the door, not this.

/** Who acts: an administrator (their account), or the operator at the command line (none); their name is how the people they touch are told of it. */
import type { Actor } from '../db/stores/audit.ts'
export type { Actor }

/** What to do with the tokens a shorter longest lifetime leaves over it. */
export type ExistingTokens = 'shorten' | 'leave'

/** A shorter longest lifetime that would leave tokens over it, sent without saying what to do with them. */
export class ChoiceNeeded extends StoreError {
  readonly days: number
  readonly tokens: number
  readonly people: number

  constructor(days: number, tokens: number, people: number) {
    super(
      `${tokens} active token${tokens === 1 ? '' : 's'} of ${people} ${people === 1 ? 'person lasts' : 'people last'} longer than ${days} days: say whether to shorten them to the new limit or leave them as they are`,
      'conflict',
      'existing_tokens',
    )
    this.days = days
    this.tokens = tokens
    this.people = people
  }
}

export interface AdministrationDeps {
  sites: SiteStore
  tokens: TokenStore
  oauth: OAuthStore
  inventory: CredentialInventory
  securityLog: SecurityLogStore
  mail: Mailer
  urls: Urls
  clock: Clock
  /** Hears of a mail that could not be sent (the action stands). */
  onMailError(error: unknown, to: string): void
}

const when = shownMoment

export function createAdministration(deps: AdministrationDeps) {
  const { sites, tokens, oauth, inventory, securityLog, mail, urls, clock } = deps

  /** One mail to each owner, with their lines; a failure is reported, never thrown. */
  async function tell(owners: Map<string, { name: string; lines: string[] }>, subject: string, intro: string[], outro: string[]) {
    if (!mail.enabled) return
    for (const [to, { name, lines }] of owners) {
      const text = [`Hello ${name || to},`, '', ...intro, '', ...lines.map((line) => `- ${line}`), '', ...outro].join('\n')
      await mail.send({ to, subject, text }).catch((error: unknown) => deps.onMailError(error, to))
    }
  }

  function byOwner<T>(items: T[], owner: (item: T) => { email: string; name: string }, line: (item: T) => string) {
    const owners = new Map<string, { name: string; lines: string[] }>()
    for (const item of items) {
      const { email, name } = owner(item)
      const entry = owners.get(email) ?? { name, lines: [] }
      entry.lines.push(line(item))
      owners.set(email, entry)
    }
    return owners
  }

  async function revokeOne(site: Site, entry: InventoryEntry, reason: string, by: Actor): Promise<void> {
    const base = { userId: entry.ownerId, siteId: site.id, actor: 'administrator', address: by.address ?? null }
    if (entry.kind === 'personal_token') {
      const token = await tokens.revoke(site.id, Number(entry.id.slice('pat-'.length)))
      await securityLog.append({ ...base, kind: 'token_revoked', detail: { ...tokenDetail(token), reason, by: by.name } })
    } else {
      await oauth.destroyGrant(entry.id.slice('oauth-'.length))
      await securityLog.append({ ...base, kind: 'oauth_revoked', detail: { application: entry.name, reason, by: by.name } })
    }
  }

  return {
    /** One page of the site's credentials, filtered and sorted. */
    async inventory(site: Site, filter: InventoryFilter) {
      return inventoryPage(await inventory.list(site.id, urls.site(site.permalink)), filter, clock())
    },

    /**
     * Revokes the credentials named, each an active personal token or OAuth authorization of the
     * site, for the reason given; nothing is revoked unless all of them can be. Each one is a
     * security-log event of its owner's; each owner gets one mail.
     */
    async revoke(site: Site, ids: string[], reason: string, by: Actor): Promise<InventoryEntry[]> {
      const why = checkReason(reason)
      const targets = revocationTargets(await inventory.list(site.id, urls.site(site.permalink)), ids)
      for (const entry of targets) await revokeOne(site, entry, why, by)
      const kindName = (entry: InventoryEntry) => (entry.kind === 'oauth' ? `the application "${entry.name}"` : `the personal API token "${entry.name}"`)
      await tell(
        byOwner(targets, (entry) => ({ email: entry.owner, name: entry.ownerName }), (entry) => `${kindName(entry)} (${entry.access === 'write' ? 'Read and write' : 'Read only'})`),
        `Access to ${site.name} revoked by an administrator`,
        [`${by.name} revoked access to the API of ${site.name} on ${when(new Date(clock()))}:`],
        [`The reason given: ${why}`, '', 'From now on every request made with it is refused. If you still need access, make a new token:', urls.apiTokensPage(site.permalink)],
      )
      return targets
    },

    /**
     * Changes the site's policy. A longest lifetime that leaves tokens over it needs a choice
     * (ChoiceNeeded otherwise): shorten them to end within the new limit (each owner mailed), or
     * leave them. Recorded in the security log with every field before and after.
     */
    async setPolicy(site: Site, changes: Partial<SitePolicy>, existing: ExistingTokens | undefined, by: Actor) {
      const days = changes.tokenMaxDays
      // Checked before the dry run, so a bad field is named before any question is asked.
      changedPolicy(policyOf(site), changes)
      const over = days === undefined ? { tokens: 0, people: 0 } : await tokens.overLimit(site.id, days)
      if (over.tokens > 0 && existing === undefined) throw new ChoiceNeeded(days!, over.tokens, over.people)
      const { before, after } = await sites.setPolicy(site.id, changes, by)
      const difference = policyDifference(before, after)
      if (Object.keys(difference).length > 0) {
        await securityLog.append({ userId: by.id, siteId: site.id, kind: 'policy_changed', actor: by.via, address: by.address ?? null, detail: { ...difference, by: by.name } })
      }
      let shortened: ShortenedToken[] = []
      if (days !== undefined && existing === 'shorten') {
        shortened = await tokens.shorten(site.id, days)
        for (const { token, expiredAt } of shortened) {
          await securityLog.append({
            userId: token.userId,
            siteId: site.id,
            kind: 'token_shortened',
            actor: 'administrator',
            address: by.address ?? null,
            detail: { ...tokenDetail(token), was: expiredAt.toISOString(), by: by.name },
          })
        }
        await tell(
          byOwner(shortened, ({ owner }) => owner, ({ token, expiredAt }) => `"${token.name}": now expires ${when(token.expiresAt)} (was ${when(expiredAt)})`),
          `Your API tokens on ${site.name} expire sooner`,
          [`${by.name} set the longest lifetime of personal API tokens on ${site.name} to ${days} days, and shortened yours to match:`],
          ['Nothing else changed: each token works until its new date. Make a new token before then where a script still needs one:', urls.apiTokensPage(site.permalink)],
        )
      }
      return { before, after, shortened: shortened.length, leftOver: existing === 'leave' ? over.tokens : 0 }
    },
  }
}

export type Administration = ReturnType<typeof createAdministration>

declare module 'fastify' {
  interface FastifyInstance {
    administration: Administration
  }
}

/** The administrators' actions over the app's stores and mailer, for the pages and the API. */
export default fp(
  async (fastify) => {
    const { sites, tokens, oauthRecords, inventory, securityLog, mail, urls, clock, log } = fastify
    fastify.decorate(
      'administration',
      createAdministration({
        sites,
        tokens,
        oauth: oauthRecords,
        inventory,
        securityLog,
        mail,
        urls,
        clock,
        onMailError: (error) => log.warn({ err: { message: (error as Error).message } }, 'could not mail the owner of a credential an administrator changed'),
      }),
    )
  },
  { name: 'administration', fastify: '5.x', dependencies: ['config', 'site-store', 'token-store', 'oauth-store', 'security-log-store', 'mail'] },
)
