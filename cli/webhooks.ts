import { webhookEvents } from '../db/values.ts'
import { OPERATOR } from '../db/stores/audit.ts'
import { eventsOf, type Webhook } from '../db/stores/webhooks.ts'
import { loadConfig } from '../config.ts'
import { shown } from '../lib/terminal-text.ts'
import { parseWebhookUrl } from '../lib/webhook-address.ts'
import { createUrls } from '../lib/urls.ts'
import { testData } from '../routes/api/webhooks.ts'
import { admin } from './admin.ts'
import { UsageError, type Command, type Io, type Values } from './command.ts'

// The sites' webhooks on the command line (docs/decisions.md, "Webhooks"), as the administration
// page and the API have them: add one (its secret printed this once), list, switch on or off,
// rotate its secret, queue the test event, remove. The running service posts what is queued.

/** The address of --url or the argument, checked as the server checks it (SERVICE_WEBHOOK_ALLOW from the environment). */
function checkedUrl(value: string, io: Io, values: Values): string {
  const { webhooks } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
  const url = parseWebhookUrl(value, webhooks.allowed)
  if (typeof url === 'string') throw new UsageError(`the address ${url}`)
  return url.href
}

const line = (webhook: Webhook) =>
  [webhook.id, webhook.url, eventsOf(webhook).join(','), webhook.enabled ? 'on' : `off${webhook.disabledReason ? ` (${webhook.disabledReason})` : ''}`, webhook.failingSince ? `failing since ${webhook.failingSince.toISOString()}` : '-', webhook.description || '-']
    .map((field) => shown(String(field)))
    .join('\t')

function eventList(value: unknown): string[] {
  const names = String(value).split(',').map((name) => name.trim()).filter(Boolean)
  return names.includes('all') ? [...webhookEvents] : names
}

/** The webhook `id` of the site, or a usage error. */
async function webhookOf(stores: Parameters<Parameters<typeof admin>[1]>[0], permalink: string, id: string): Promise<{ site: { id: number; permalink: string }; webhook: Webhook }> {
  const site = await stores.sites.get(permalink)
  if (!/^[1-9]\d{0,9}$/.test(id)) throw new UsageError(`a webhook id is a number, not "${id}"`)
  return { site, webhook: await stores.webhooks.get(site.id, Number(id)) }
}

export const webhookCommands: Command[] = [
  admin(
    {
      words: ['webhook', 'add'],
      args: ['<site>', '<url>'],
      options: {
        events: { type: 'string', value: 'NAMES', about: `the events to post, comma-separated, or all: ${webhookEvents.join(', ')}` },
        description: { type: 'string', value: 'TEXT', about: 'what it is for, as the administration page shows it' },
        'internal-comments': { type: 'boolean', about: 'tell comment.created of internal notes too' },
      },
      usage: 'webhook add <site> <url> --events NAMES [--description TEXT] [--internal-comments]',
      summary: "Post the site's events to an address, signed (Standard Webhooks); prints its signing secret, this once.",
    },
    async (stores, [permalink, url], values, io) => {
      if (values.events === undefined) throw new UsageError(`--events is needed: comma-separated names, or all (${webhookEvents.join(', ')})`)
      const site = await stores.sites.get(permalink)
      const { webhook, secret } = await stores.webhooks.add(site.id, {
        url: checkedUrl(url!, io, values),
        events: eventList(values.events),
        description: values.description === undefined ? '' : String(values.description),
        internalComments: values['internal-comments'] === true,
      }, OPERATOR)
      io.stdout(`webhook ${webhook.id} of ${site.permalink} posts ${eventsOf(webhook).join(', ')} to ${webhook.url}\nits signing secret, shown this once: ${secret}\n`)
    },
  ),
  admin(
    {
      words: ['webhook', 'list'],
      args: ['<site>'],
      usage: 'webhook list <site>',
      summary: 'One line per webhook of the site: its id, address, events, on or off (and why), since when it fails, its description.',
      atomic: false,
    },
    async ({ sites, webhooks }, [permalink], _values, io) => {
      const site = await sites.get(permalink)
      for (const webhook of await webhooks.list(site.id)) io.stdout(`${line(webhook)}\n`)
    },
  ),
  admin(
    {
      words: ['webhook', 'switch'],
      args: ['<site>', '<id>', '<on|off>'],
      usage: 'webhook switch <site> <id> on|off',
      summary: 'Switch a webhook on (forgetting why it was switched off) or off.',
    },
    async (stores, [permalink, id, state], _values, io) => {
      if (state !== 'on' && state !== 'off') throw new UsageError(`say on or off, not "${state}"`)
      const { site, webhook } = await webhookOf(stores, permalink!, id!)
      const changed = await stores.webhooks.update(site.id, webhook.id, { enabled: state === 'on' }, OPERATOR)
      io.stdout(`${line(changed)}\n`)
    },
  ),
  admin(
    {
      words: ['webhook', 'rotate'],
      args: ['<site>', '<id>'],
      usage: 'webhook rotate <site> <id>',
      summary: 'A new signing secret for the webhook, printed this once; the old one signs beside it for a day.',
    },
    async (stores, [permalink, id], _values, io) => {
      const { site, webhook } = await webhookOf(stores, permalink!, id!)
      const { secret } = await stores.webhooks.rotate(site.id, webhook.id, OPERATOR)
      io.stdout(`webhook ${webhook.id}: its new signing secret, shown this once: ${secret}\nthe old one signs beside it for a day\n`)
    },
  ),
  admin(
    {
      words: ['webhook', 'test'],
      args: ['<site>', '<id>'],
      usage: 'webhook test <site> <id>',
      summary: 'Queue the test event (webhook.test) for the webhook; the running service posts it, and `webhook list` or the page shows how it went.',
    },
    async (stores, [permalink, id], values, io) => {
      const { site, webhook } = await webhookOf(stores, permalink!, id!)
      const { baseUrl, siteUrl } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
      const eventId = await stores.webhooks.queueTest(site.id, webhook.id, testData({ urls: createUrls(baseUrl, siteUrl), clock: io.clock }, site.permalink, webhook))
      io.stdout(`test event ${eventId} queued for ${webhook.url}\n`)
    },
  ),
  admin(
    {
      words: ['webhook', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'webhook remove <site> <id>',
      summary: 'Remove a webhook, its queued events and its log.',
    },
    async (stores, [permalink, id], _values, io) => {
      const { site, webhook } = await webhookOf(stores, permalink!, id!)
      await stores.webhooks.remove(site.id, webhook.id, OPERATOR)
      io.stdout(`webhook ${webhook.id} removed from ${site.permalink}\n`)
    },
  ),
]
