import { join } from 'node:path'
import t from 'tap'
import { packageRoot, resources } from '../../lib/resources.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('the package root is found from the sources and from the built service alike', async (t) => {
  t.equal(packageRoot('/srv/service-desk/lib'), '/srv/service-desk')
  t.equal(packageRoot('/srv/service-desk/dist'), '/srv/service-desk', 'the build bundles into dist/ itself, and copies neither views/ nor the migrations')
  t.equal(resources.views, join(import.meta.dirname, '..', '..', 'views'))
})
