import { sql } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { hashPassword, randomPassword } from '../../../lib/password.ts'
import type { SecretBox } from '../../../lib/secret-box.ts'
import { DEMO_CATEGORY, DEMO_SITE, DEMO_SUPPORTER, FIRST_RUN_TOKEN, WELCOME, type FirstRun } from '../../stores/bootstrap.ts'
import { eventRow, firstRunTokenEvent } from '../../stores/security-log.ts'
import { securityEvents } from '../schema.ts'
import { STAFF_ROLE } from '../../stores/staff.ts'
import type { PgDb } from '../client.ts'
import { addCategory } from './categories.ts'
import { createPgAuthors } from './discussion-authors.ts'
import { createDiscussionIn } from './discussions.ts'
import { addSite, noSites } from './sites.ts'
import { createToken } from './tokens.ts'
import { checkNewUser, insertUser, setRole } from './users.ts'

// The first run on PostgreSQL (db/stores/bootstrap.ts). Several processes may start at once on an
// empty database: each takes this transaction-scoped advisory lock before looking again, so the
// first bootstraps and the others, let in after its commit, see its site and return null.
const BOOTSTRAP_LOCK = 7_146_201_516

/**
 * On a database without any site: the demo site, a supporter with a random password, a
 * read-and-write personal token, a public category and a welcome discussion, all in one
 * transaction. Returns null on every later start.
 */
export async function bootstrapFirstRun(db: PgDb, clock: Clock, box: SecretBox): Promise<FirstRun | null> {
  if (!(await noSites(db))) return null
  const password = randomPassword()
  const passwordHash = await hashPassword(password)
  return db.transaction(async (tx): Promise<FirstRun | null> => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`)
    // Looked at again under the lock (a new snapshot under READ COMMITTED): another process may
    // have bootstrapped meanwhile.
    if (!(await noSites(tx))) return null
    const site = await addSite(tx, clock, DEMO_SITE.permalink, DEMO_SITE.name)
    const user = await insertUser(tx, clock, box, await checkNewUser(tx, DEMO_SUPPORTER), passwordHash)
    await setRole(tx, clock, site.id, user.id, STAFF_ROLE)
    const { value, token } = await createToken(tx, clock, FIRST_RUN_TOKEN(site.id, user.id))
    await tx.insert(securityEvents).values(eventRow(firstRunTokenEvent(token), clock()))
    // A public category and one discussion from a customer, so the listing shows what it does.
    const category = await addCategory(tx, clock, site.id, DEMO_CATEGORY, true)
    await createDiscussionIn(tx, clock, createPgAuthors(clock, box), {
      siteId: site.id,
      categoryId: category.id,
      title: WELCOME.title,
      body: WELCOME.body,
      supporterId: user.id,
      onBehalfOf: WELCOME.from,
      via: 'api',
    })
    return { site, email: user.email, password, token: value }
  })
}
