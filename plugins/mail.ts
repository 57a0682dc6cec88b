import fp from 'fastify-plugin'
import { createMailer, type Mailer, type MailSettings } from '../lib/mailer.ts'

// The service's mailer (lib/mailer.ts), when SERVICE_SMTP_URL is set; one that sends nothing otherwise.

export type { MailSettings } from '../lib/mailer.ts'

declare module 'fastify' {
  interface FastifyInstance {
    mail: Mailer
  }
}

export default fp<{ settings?: MailSettings }>(
  async (fastify, { settings }) => {
    const mailer = await createMailer(settings)
    fastify.decorate('mail', mailer)
    fastify.addHook('onClose', async () => mailer.close())
  },
  { name: 'mail', fastify: '5.x' },
)
