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
    let settled: Promise<string | null> | undefined
    fastify.decorate('mailHeld', async () => {
      if (!settled) {
        const first = (settled = fastify.database.place().then((place) => fastify.mailboxes.settleHome(place)))
        // A database that cannot be reached now is looked at again next time.
        first.catch(() => (settled = undefined))
        const held = await first
        if (held) fastify.log.warn({ mail: { held } }, 'mail and webhooks are held')
        return held
      }
      await settled
      return fastify.mailboxes.held()
    })
  },
  { name: 'mail-home', fastify: '5.x', dependencies: ['discussion-stores'] },
)
