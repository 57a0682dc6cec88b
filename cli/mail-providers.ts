import { DEFAULT_SCOPES, PRESETS, isClientSecret, isProviderName, issuerProblem, parseServer, serverAddress, type MailServer, type PresetName, type ProviderSettings } from '../lib/mail-oauth.ts'
import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command, type Values } from './command.ts'

// The applications the operator registers at mail providers (docs/decisions.md, "Mailboxes
// connected with OAuth"; docs/operations.md, "Microsoft 365 and Google Workspace"): with one, a
// site's administrators connect the provider's mailboxes on their mail page. `microsoft` and
// `google` know their issuer, scopes and servers; another provider is named with all of them. The
// client secret is read from standard input (never the command line, which other users may see).

const isPreset = (name: string): name is PresetName => Object.hasOwn(PRESETS, name)

/** The settings of a provider from the command line, the preset's where the operator gives none. */
function settingsOf(name: string, values: Values, clientSecret: string): { label: string; settings: ProviderSettings } {
  const given = (option: string) => (typeof values[option] === 'string' ? (values[option] as string).trim() : undefined)
  const preset = isPreset(name) ? PRESETS[name] : undefined
  if (!preset) for (const option of ['issuer', 'imap', 'smtp']) if (given(option) === undefined) throw new UsageError(`a provider other than ${Object.keys(PRESETS).join(' or ')} needs --${option}`)
  if (given('tenant') !== undefined && name !== 'microsoft') throw new UsageError('--tenant is for microsoft only')
  if (given('tenant') !== undefined && !/^[A-Za-z0-9.-]{1,100}$/.test(given('tenant')!)) throw new UsageError('--tenant must be a tenant id or domain (or organizations)')
  const issuer = given('issuer') ?? preset!.issuer(given('tenant'))
  const problem = issuerProblem(issuer)
  if (problem) throw new UsageError(`--issuer ${problem}`)
  const server = (kind: 'imap' | 'smtp'): MailServer => {
    const value = given(kind)
    if (value === undefined) return preset![kind]
    const parsed = parseServer(value, kind)
    if (typeof parsed === 'string') throw new UsageError(`--${kind} ${parsed}`)
    return parsed
  }
  const scopes = (values.scope as unknown as string[] | undefined)?.flatMap((s) => s.split(/\s+/)).filter(Boolean)
  const clientId = given('client-id')!
  if (!/^[\x21-\x7E]{1,300}$/.test(clientId)) throw new UsageError('--client-id must be the application (client) id the provider gave')
  if (!isClientSecret(clientSecret)) throw new UsageError('the client secret (standard input) must be the secret the provider gave, on one line')
  return {
    label: given('label') ?? preset?.label ?? name,
    settings: {
      issuer,
      clientId,
      clientSecret,
      scopes: scopes && scopes.length > 0 ? scopes : [...(preset?.scopes ?? DEFAULT_SCOPES)],
      authorizationParameters: { ...(preset?.authorizationParameters ?? {}) },
      imap: server('imap'),
      smtp: server('smtp'),
    },
  }
}

export const mailProviderCommands: Command[] = [
  admin(
    {
      words: ['mail-provider', 'add'],
      args: ['<name>'],
      options: {
        'client-id': { type: 'string', value: 'ID', about: 'the application (client) id the provider gave when the service was registered there' },
        tenant: { type: 'string', value: 'ID', about: 'microsoft: the directory (tenant) id or domain whose accounts may connect', fallback: 'organizations: any work account' },
        issuer: { type: 'string', value: 'URL', about: "the provider's issuer address (OpenID discovery); known for microsoft and google" },
        imap: { type: 'string', value: 'URL', about: 'its IMAP server, imaps://imap.example.com:993; known for microsoft and google' },
        smtp: { type: 'string', value: 'URL', about: 'its SMTP server, smtps://smtp.example.com:465 or smtp://…:587 (STARTTLS); known for microsoft and google' },
        scope: { type: 'string', value: 'SCOPE', multiple: true, about: 'a scope the sign-in asks for (several: give it again); known for microsoft and google', fallback: DEFAULT_SCOPES.join(' ') },
        label: { type: 'string', value: 'TEXT', about: 'the name on the button, "Connect <label>"', fallback: 'Microsoft 365, Google Workspace, or the name' },
      },
      usage: 'mail-provider add <name> --client-id ID [--tenant ID] [--issuer URL --imap URL --smtp URL] [--scope SCOPE]... [--label TEXT] < secret',
      summary: "Register the service's application at a mail provider (microsoft, google, or another by its issuer), its client secret read from standard input: sites' administrators then connect its mailboxes on their mail page.",
    },
    async ({ mailboxes, sites, urls }, [name], values, io) => {
      if (!isProviderName(name!)) throw new UsageError(`a provider's name is a short word of lower-case letters, digits and dashes, such as microsoft, google or fastmail, not "${name}"`)
      if (typeof values['client-id'] !== 'string') throw new UsageError('--client-id is needed: the application (client) id the provider gave')
      const secret = (await io.readStdin()).replace(/\r?\n$/, '')
      if (secret === '') throw new UsageError('give the client secret on standard input, such as: service-desk mail-provider add microsoft --client-id ID < secret-file')
      const { label, settings } = settingsOf(name!, values, secret)
      await mailboxes.addProvider(name!, label, settings)
      io.stdout(`mail provider ${name} registered (${shown(label)}: ${shown(settings.issuer)}; IMAP ${serverAddress(settings.imap, 'imap')}, SMTP ${serverAddress(settings.smtp, 'smtp')})\n`)
      const list = await sites.list()
      if (list.length > 0) io.stdout(`its redirect addresses to register at the provider:\n${list.map((site) => `  ${urls.siteWeb(site.permalink)}/admin/mail/connected\n`).join('')}`)
    },
  ),
  admin(
    {
      words: ['mail-provider', 'list'],
      args: [],
      usage: 'mail-provider list',
      summary: 'One line per registered mail provider: its name, label, issuer, IMAP and SMTP servers, and when it was added; the client secret is never shown.',
      atomic: false,
    },
    async ({ mailboxes }, _args, _values, io) => {
      for (const provider of await mailboxes.providers()) {
        const servers = provider.settings ? [serverAddress(provider.settings.imap, 'imap'), serverAddress(provider.settings.smtp, 'smtp')] : ['sealed under another server key: register it again', '-']
        io.stdout(`${[provider.name, provider.label, provider.issuer, ...servers, provider.createdAt.toISOString()].map((field) => shown(field)).join('\t')}\n`)
      }
    },
  ),
  admin(
    {
      words: ['mail-provider', 'secret'],
      args: ['<name>'],
      usage: 'mail-provider secret <name> < secret',
      summary: "Give a registered mail provider's application its new client secret, read from standard input; connected mailboxes go on as they are, and those the old secret's end stopped go on again.",
    },
    async ({ mailboxes }, [name], _values, io) => {
      const secret = (await io.readStdin()).replace(/\r?\n$/, '')
      if (!isClientSecret(secret)) throw new UsageError('give the new client secret on standard input, on one line')
      const resumed = await mailboxes.setProviderSecret(name!, secret)
      if (!resumed) throw new UsageError(`no mail provider is registered as ${name} (or it is sealed under another server key: register it again)`)
      io.stdout(`mail provider ${name} has its new client secret${resumed.length > 0 ? `; going on: ${resumed.join(', ')}` : ''}\n`)
    },
  ),
  admin(
    {
      words: ['mail-provider', 'remove'],
      args: ['<name>'],
      usage: 'mail-provider remove <name>',
      summary: 'Forget a registered mail provider; refused while mailboxes sign in through it (remove them first).',
    },
    async ({ mailboxes }, [name], _values, io) => {
      if (!(await mailboxes.removeProvider(name!))) throw new UsageError(`no mail provider is registered as ${name}`)
      io.stdout(`mail provider ${name} removed\n`)
    },
  ),
]
