import { eq } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { hashPassword, randomPassword } from '../../lib/password.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { createCategoryStore } from './categories.ts'
import { createDiscussionStore } from './discussions.ts'
import { eventRow, firstRunTokenEvent } from './security-log.ts'
import { createSiteStore, insertSiteUnlessTaken, type Site } from './sites.ts'
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
 * transaction. Returns null on every later start, and in the process that lost the race when two
 * start at once on an empty database: the demo site's permalink is taken, and nothing is written.
 */
export async function bootstrapFirstRun(
  port: StorePort,
  clock: Clock,
  box: SecretBox,
  listingOf: Parameters<typeof createDiscussionStore>[3],
): Promise<FirstRun | null> {
  if (!(await createSiteStore(port, clock).isEmpty())) return null
  const password = randomPassword()
  const passwordHash = await hashPassword(password)
  return port.atomic(async (tx): Promise<FirstRun | null> => {
    const sites = createSiteStore(tx, clock)
    // Looked at again inside the transaction: another process may have bootstrapped meanwhile.
    if (!(await sites.isEmpty())) return null
    // Of two first runs at once, the one whose insert finds the permalink taken writes nothing.
    const site = await insertSiteUnlessTaken(tx, clock, DEMO_SITE.permalink, DEMO_SITE.name)
    if (!site) return null
    const users = createUserStore(tx, clock, box)
    const user = await users.insert(DEMO_SUPPORTER, passwordHash)
    // The first supporter administers the demo site (docs/decisions.md, "Site administrators").
    await users.addStaff(site.id, user.id, { administrator: true })
    const { value, token } = await createTokenStore(tx, clock).create(FIRST_RUN_TOKEN(site.id, user.id))
    await tx.db.insert(tx.tables.securityEvents).values(eventRow(firstRunTokenEvent(token), clock()))
    // A public category and one discussion from a customer, so the listing shows what it does.
    const category = await createCategoryStore(tx, clock).add(site.id, DEMO_CATEGORY, true)
    await createDiscussionStore(tx, clock, box, listingOf).create({
      siteId: site.id,
      categoryId: category.id,
      title: WELCOME.title,
      body: WELCOME.body,
      supporterId: user.id,
      onBehalfOf: WELCOME.from,
      via: 'api',
    })
    // The welcome is the demo's own: nobody is mailed about it (its supporter would hear of it).
    await tx.db.delete(tx.tables.outbox).where(eq(tx.tables.outbox.siteId, site.id))
    return { site, email: user.email, password, token: value }
  })
}
