import fp from 'fastify-plugin'
import { createSecretBox, type SecretBox } from '../lib/secret-box.ts'
import { serverSecret } from '../lib/server-key.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The server key (SERVICE_SECRET or the data folder's key file), from which other secrets derive. */
    serverKey: string
    /** Seals what must be shown again (the legacy tokens) under the server key. */
    secretBox: SecretBox
  }
}

/** The server key of a database: SERVICE_SECRET, or the key file beside the database (lib/server-key.ts). */
export default fp<{ databaseAddress: string; secret?: string }>(
  async (fastify, { databaseAddress, secret }) => {
    const serverKey = serverSecret({ secret, databaseAddress })
    fastify.decorate('serverKey', serverKey)
    fastify.decorate('secretBox', createSecretBox(serverKey))
  },
  { name: 'server-key', fastify: '5.x' },
)
