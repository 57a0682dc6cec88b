import { readFileSync } from 'node:fs'
import type { FastifyPluginAsync } from 'fastify'
import { resources } from '../lib/resources.ts'

// The README of this checkout, at {base_url}/README.md: the Deprecation header's Link points at its
// section on migrating from multipass, so the guide that matches the running version is always there.
// `.` is outside the permalink alphabet, so this address can never be a site's.
const README = resources.readme

const readmeRoute: FastifyPluginAsync<{ file?: string }> = async (fastify, { file = README }) => {
  let text: string | null = null
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    // No README beside the code (a trimmed install): the address is a plain 404.
  }
  fastify.get('/README.md', async (_request, reply) => {
    if (text === null) return reply.callNotFound()
    return reply.type('text/markdown; charset=utf-8').header('cache-control', 'public, max-age=300').send(text)
  })
}

export default readmeRoute
