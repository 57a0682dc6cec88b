import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'
import { buildApp } from '../../app.ts'

// `npm run client:generate` (tools/client/main.ts): the OpenAPI document of the API as the service serves it, and the
// TypeScript types openapi-typescript generates from it, written into clients/typescript/. Both are
// committed, and test/clients/typescript.test.ts fails when the live document differs from them:
// the document changes only when the API does, and the change shows in review.

export const CLIENT = resolve(import.meta.dirname, '..', '..', 'clients', 'typescript')
// The address the README's first run serves on; the types do not depend on it.
export const DOCUMENT_BASE_URL = 'http://localhost:3000'

const HEADER = `// Generated from the Service Desk OpenAPI document by openapi-typescript: do not edit.
// Regenerate with \`npm run client:generate\` (tools/client/main.ts).

`

/** The live document (from an app on an empty in-memory database) and the types generated from it. */
export async function generateClient(): Promise<{ document: string; types: string }> {
  const app = buildApp({ config: { baseUrl: DOCUMENT_BASE_URL, siteUrl: `${DOCUMENT_BASE_URL}/{site}`, databaseAddress: ':memory:' } })
  try {
    await app.ready()
    const document = (await app.inject({ url: '/openapi.json' })).json() as OpenAPI3
    const types = HEADER + astToString(await openapiTS(structuredClone(document)))
    return { document: `${JSON.stringify(document, null, 2)}\n`, types }
  } finally {
    await app.close()
  }
}

/** Writes openapi.json and schema.d.ts into `folder` (clients/typescript/ for `npm run client:generate`); answers their paths. */
export async function writeClient(folder: string): Promise<string[]> {
  const { document, types } = await generateClient()
  const written = [join(folder, 'openapi.json'), join(folder, 'schema.d.ts')]
  writeFileSync(written[0], document)
  writeFileSync(written[1], types)
  return written
}
