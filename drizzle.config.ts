import { defineConfig } from 'drizzle-kit'

// Used only by `npm run db:generate` to write migrations; the service applies them itself at start-up.
export default defineConfig({
  dialect: 'sqlite',
  schema: './db/schema/sqlite.ts',
  out: './db/sqlite/migrations',
})
