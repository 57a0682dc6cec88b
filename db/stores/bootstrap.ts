import type { Db } from '../sqlite/client.ts'
import { securityEvents } from '../sqlite/schema.ts'
import type { Clock } from '../../lib/clock.ts'
import { hashPassword, randomPassword } from '../../lib/password.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { createCategoryStore } from './categories.ts'
import { createDiscussionStore } from './discussions.ts'
import { eventRow, firstRunTokenEvent } from './security-log.ts'
import { createSiteStore, type Site } from './sites.ts'
import { createTokenStore } from './tokens.ts'
import { createUserStore } from './users.ts'

export const DEMO_SITE = { permalink: 'demo', name: 'Demo' }
export const DEMO_SUPPORTER = { email: 'supporter@example.com', name: 'Demo Supporter' }
export const DEMO_CATEGORY = 'General'
export const WELCOME = {
  title: 'Welcome to Service Desk',
  body: 'This is the demo site. Reply to this discussion, resolve it, or create your own through the API.',
  from: { email: 'customer@example.com', name: 'Demo Customer' },
}

/** The demo supporter's token, printed once in the first-run banner. */
export const FIRST_RUN_TOKEN = (siteId: number, userId: number) => ({ siteId, userId, name: 'First-run token', access: 'write' as const, expiresInDays: 90 })

export interface FirstRun {
  site: Site
  email: string
  password: string
  token: string
}

/**
 * On a database without any site: the demo site, a supporter with a random password, a
 * read-and-write personal token, a public category and a welcome discussion, all in one
 * transaction. Returns null on every later start.
 */
export async function bootstrapFirstRun(db: Db, clock: Clock, box: SecretBox): Promise<FirstRun | null> {
  const sites = createSiteStore(db, clock)
  const users = createUserStore(db, clock, box)
  const tokens = createTokenStore(db, clock)
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
      const { value, token } = tokens.create(FIRST_RUN_TOKEN(site.id, user.id))
      db.insert(securityEvents).values(eventRow(firstRunTokenEvent(token), clock())).run()
      // A public category and one discussion from a customer, so the listing shows what it does.
      const category = createCategoryStore(db, clock).add(site.id, DEMO_CATEGORY, true)
      createDiscussionStore(db, clock, users).create({
        siteId: site.id,
        categoryId: category.id,
        title: WELCOME.title,
        body: WELCOME.body,
        supporterId: user.id,
        onBehalfOf: WELCOME.from,
        via: 'api',
      })
      return { site, email: user.email, password, token: value }
    },
    { behavior: 'immediate' },
  )
}
