import { relative } from 'node:path'
import { CLIENT, writeClient } from './generate.ts'

// `npm run client:generate`: regenerates clients/typescript/openapi.json and schema.d.ts.
for (const file of await writeClient(CLIENT)) console.log(`wrote ${relative(process.cwd(), file)}`)
