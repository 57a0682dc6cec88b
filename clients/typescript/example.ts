import { createServiceDeskClient } from './index.ts'

// Lists the open discussions of a site and replies to the first; run against the first-run banner:
// SERVICE_URL=http://localhost:3000 SERVICE_SITE=demo SERVICE_TOKEN=service_pat_... node example.ts
const desk = createServiceDeskClient({ baseUrl: process.env.SERVICE_URL!, token: process.env.SERVICE_TOKEN! })
const site = process.env.SERVICE_SITE ?? 'demo'
const { data: listing } = await desk.GET('/{site}/discussions', { params: { path: { site } } })
for (const d of listing!.discussions) console.log(`#${d.number} [${d.state}] ${d.title}`)
const first = listing!.discussions[0]
const { data: reply, error } = await desk.POST('/{site}/discussions/{number}/comments', { params: { path: { site, number: first.number } }, body: { body: 'Thanks, we are on it.' } })
if (error) throw new Error(`the reply was refused: ${JSON.stringify(error)}`)
console.log(`replied as comment ${reply.number} to #${first.number}; the token expires ${desk.tokenExpiresAt?.toISOString()}`)
