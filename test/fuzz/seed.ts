import type { buildApp } from '../../app.ts'
import { inDays, legacyTokenOf, makeMultipass } from '../fixtures/credentials.ts'
import type { Known } from './arbitraries.ts'

type App = ReturnType<typeof buildApp>

export const FUZZ_PASSWORD = 'fuzzing is fun 4 all'

/**
 * The rows the fuzzers aim at, made through the stores and the API on a ready app: site `demo`
 * with a supporter holding every kind of credential, a category and a discussion; site `other`
 * where the supporter is not staff; and a second supporter with a password for the web pages.
 */
export async function seedFuzzData(app: App): Promise<Known & { webEmail: string }> {
  const site = (await app.sites.find('demo')) ?? (await app.sites.add('demo', 'Demo'))
  if (!(await app.sites.find('other'))) await app.sites.add('other', 'Other')
  const user = await app.users.add({ email: 'fuzz@example.test', password: FUZZ_PASSWORD })
  await app.users.addStaff(site.id, user.id)
  const web = await app.users.add({ email: 'fuzz-web@example.test', password: FUZZ_PASSWORD })
  await app.users.addStaff(site.id, web.id)
  const { value: token } = await app.tokens.create({ siteId: site.id, userId: user.id, name: 'fuzz', access: 'write', expiresInDays: 365 })
  const category = await app.categories.add(site.id, 'Questions', true)
  const created = await app.inject({
    method: 'POST',
    url: `/demo/categories/${category.id}/discussions`,
    headers: { authorization: `Bearer ${token}` },
    payload: { title: 'Seed', body: 'A discussion to aim at.' },
  })
  if (created.statusCode !== 201) throw new Error(`seeding failed: ${created.statusCode} ${created.body}`)
  return {
    site: 'demo',
    otherSite: 'other',
    token,
    legacyKey: (await legacyTokenOf(app, user.id)).value,
    multipass: makeMultipass({ email: user.email, expires: inDays(app, 3650) }, site.multipassKey, 'demo'),
    categoryId: category.id,
    discussionNumber: created.json().number,
    webEmail: web.email,
  }
}
