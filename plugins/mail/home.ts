import fp from 'fastify-plugin'

// Where mail and webhooks are at home (docs/decisions.md, "Mail a team can rely on"): a database
// restored from a backup or copied elsewhere (a test copy, `service-desk copy`) neither fetches the
// team's mailboxes nor sends what its outbox holds until an operator says so (`service-desk mail
// resume`), so a copy never pulls production mail or mails customers twice. Looked at by the
// sender and the fetcher before each round: `mail hold` and `mail resume` count at once, in every
// process.

declare module 'fastify' {
  interface FastifyInstance {
    /** Why mail and webhooks are held on this database, or null when they go (the first call settles their home). */
    mailHeld(): Promise<string | null>
  }
}

export default fp(
  async (fastify) => {
    // Settled at the first look that reaches the database (two at once both settle it: the same answer).
    let settled = false
    fastify.decorate('mailHeld', async () => {
      if (settled) return fastify.mailboxes.held()
      const held = await fastify.mailboxes.settleHome(await fastify.database.place())
      settled = true
      if (held) fastify.log.warn({ mail: { held } }, 'mail and webhooks are held')
      return held
    })
  },
  { name: 'mail-home', fastify: '5.x', dependencies: ['discussion-stores'] },
)
