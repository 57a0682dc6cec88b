import { admin } from './admin.ts'
import { shownMoment } from '../lib/clock.ts'
import { UsageError, type Command } from './command.ts'

// The credentials other than personal tokens: the accounts' legacy tokens and the sites' multipass keys.

const moment = shownMoment

export const credentialCommands: Command[] = [
  admin(
    {
      words: ['legacy-token', 'show'],
      args: ['<email>'],
      usage: 'legacy-token show <email>',
      summary: "Print the account's legacy API token (X-Service-Auth) alone; its expiry goes to standard error.",
    },
    async ({ users }, [email], _values, io) => {
      const token = await users.legacyTokens.current((await users.get(email)).id)
      io.stdout(`${token.value}\n`)
      io.stderr(`${token.expiresAt.getTime() <= io.clock() ? 'expired' : 'expires'} ${moment(token.expiresAt)}\n`)
    },
  ),
  admin(
    {
      words: ['legacy-token', 'reset'],
      args: ['<email>'],
      usage: 'legacy-token reset <email>',
      summary: 'Replace the legacy API token and print the new value alone: the old one stops working at once, the new one expires in a year.',
    },
    async ({ users, securityLog }, [email], _values, io) => {
      const user = await users.get(email)
      const token = await users.legacyTokens.reset(user.id)
      await securityLog.append({ userId: user.id, kind: 'legacy_token_reset', actor: 'cli' })
      io.stdout(`${token.value}\n`)
    },
  ),
  admin(
    {
      words: ['site', 'multipass-key'],
      args: ['<site>'],
      options: {
        rotate: { type: 'boolean', about: 'replace the key with a new random one' },
        set: { type: 'string', value: 'VALUE', about: 'replace the key with this one (8 to 256 characters)' },
      },
      usage: 'site multipass-key <site> [--rotate | --set VALUE]',
      summary:
        "Print the site's multipass key. --rotate replaces it with a new random one, --set VALUE with the given one (8 to 256 characters); tokens made with the old key stop working.",
    },
    async ({ sites }, [permalink], values, io) => {
      const given = values.set as string | undefined
      if (values.rotate === true && given !== undefined) throw new UsageError('--rotate and --set cannot be combined')
      const site = await sites.get(permalink)
      const key = values.rotate === true || given !== undefined ? await sites.setMultipassKey(site.id, given) : site.multipassKey
      io.stdout(`${key}\n`)
    },
  ),
]
