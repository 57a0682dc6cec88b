import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import view from '@fastify/view'
import { Eta } from 'eta'
import fp from 'fastify-plugin'
import { resources } from '../lib/resources.ts'

declare module 'fastify' {
  interface FastifyReply {
    /** Renders a page of views/ inside the layout, with the security headers every page carries. */
    page(template: string, data: Record<string, unknown>, status?: number, headers?: Record<string, string>): Promise<FastifyReply>
  }
}

export const VIEWS = resources.views

// Only the project's own assets, no inline script or style, no framing, forms only to ourselves.
export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  // Pages show who is signed in, and one shows a new token: nothing of them is stored anywhere.
  'cache-control': 'no-store',
}

const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'app.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(VIEWS, 'assets', 'app.css')) },
  'copy.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(VIEWS, 'assets', 'copy.js')) },
  'passkeys.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(VIEWS, 'assets', 'passkeys.js')) },
  'live.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(VIEWS, 'assets', 'live.js')) },
  // @simplewebauthn/browser, served from here: no page loads a script from another host.
  'webauthn.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(resources.webauthnBrowser) },
}

/** Eta templates with one layout, the page decorator, and the stylesheet and script they use. */
export default fp(
  async (fastify) => {
    await fastify.register(view, {
      engine: { eta: new Eta({ autoEscape: true }) },
      root: VIEWS,
      layout: 'layout',
      production: true,
    })
    fastify.decorateReply('page', async function (template: string, data: Record<string, unknown>, status = 200, headers = {}) {
      const html = await this.viewAsync(template, data)
      return this.code(status).headers({ ...SECURITY_HEADERS, ...headers }).type('text/html; charset=utf-8').send(html)
    })
    // Assets are addressed under each site's pages, so a proxy that forwards the site URL forwards them too.
    // Open to everyone who may see a page, a supporter who must add a second factor first included.
    fastify.get('/assets/:file', { config: { beforeSecondFactor: true } }, async (request, reply) => {
      const asset = ASSETS[(request.params as { file: string }).file]
      if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('Not found\n')
      return reply
        .headers({ 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' })
        .type(asset.type)
        .send(asset.body)
    })
  },
  { name: 'views', fastify: '5.x' },
)
