import { join } from 'node:path'
import t from 'tap'
import { packageRoot, resources } from '../../lib/resources.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('the package root is found from the sources and from the compiled files alike', async (t) => {
  t.equal(packageRoot('/srv/service-desk/lib'), '/srv/service-desk')
  t.equal(packageRoot('/srv/service-desk/dist/lib'), '/srv/service-desk', 'tsc does not copy views/ or the migrations into dist/')
  t.equal(resources.views, join(import.meta.dirname, '..', '..', 'views'))
})
