import { defineConfig } from 'drizzle-kit'

// The PostgreSQL schema's migrations (npm run db:generate writes both engines'); the service
// applies them itself at start-up and `service-desk migrate` does on demand.
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema/postgres.ts',
  out: './db/postgres/migrations',
})
