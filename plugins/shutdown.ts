import fp from 'fastify-plugin'

/**
 * Graceful shutdown's missing piece: Fastify stops accepting and closes idle keep-alive connections
 * at close, but a connection whose request is still in flight would stay open after its answer
 * (keep-alive), holding the process until the grace period kills it with the database unclosed.
 * Once closing, every answer still being made says `Connection: close`, so Node ends the connection
 * behind it and close completes: the pending last-used times are written and the file is closed.
 */
export default fp(
  async (fastify) => {
    let closing = false
    fastify.addHook('preClose', async () => {
      closing = true
    })
    // A hook with a callback, not async: no promise per answer.
    fastify.addHook('onSend', (_request, reply, payload, done) => {
      if (closing) reply.header('connection', 'close')
      done(null, payload)
    })
  },
  { name: 'shutdown', fastify: '5.x' },
)
