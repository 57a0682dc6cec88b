// drizzle-kit names PostgreSQL's default schema in every reference it writes ("public"."sites").
// The service places its tables in the schema its address names (?schema=, db/postgres/client.ts),
// so the migrations must name none: run after `drizzle-kit generate` by `npm run db:generate`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const folder = join(import.meta.dirname, '..', '..', 'db', 'postgres', 'migrations')
for (const name of readdirSync(folder).filter((n) => n.endsWith('.sql'))) {
  const path = join(folder, name)
  const text = readFileSync(path, 'utf8')
  const unqualified = text.replaceAll('"public".', '')
  if (unqualified !== text) writeFileSync(path, unqualified)
}
