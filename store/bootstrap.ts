import type { Db } from '../db/client.ts'
import { hashPassword, randomPassword } from '../lib/password.ts'
import type { Site, SiteStore } from './sites.ts'
import type { TokenStore } from './tokens.ts'
import type { UserStore } from './users.ts'

export const DEMO_SITE = { permalink: 'demo', name: 'Demo' }
export const DEMO_SUPPORTER = { email: 'supporter@example.com', name: 'Demo Supporter' }

export interface FirstRun {
  site: Site
  email: string
  password: string
  token: string
}

/**
 * On a database without any site: the demo site, a supporter with a random password and a
 * read-and-write personal token, all in one transaction. Returns null on every later start.
 */
export async function bootstrapFirstRun(stores: { db: Db; sites: SiteStore; users: UserStore; tokens: TokenStore }) {
  const { db, sites, users, tokens } = stores
  if (!sites.isEmpty()) return null
  const password = randomPassword()
  const passwordHash = await hashPassword(password)
  return db.transaction(
    (): FirstRun | null => {
      // Checked again inside the write lock: another process may have bootstrapped meanwhile.
      if (!sites.isEmpty()) return null
      const site = sites.add(DEMO_SITE.permalink, DEMO_SITE.name)
      const user = users.insert(DEMO_SUPPORTER, passwordHash)
      users.addStaff(site.id, user.id)
      const { value } = tokens.create({
        siteId: site.id,
        userId: user.id,
        name: 'First-run token',
        access: 'write',
        expiresInDays: 90,
      })
      return { site, email: user.email, password, token: value }
    },
    { behavior: 'immediate' },
  )
}
