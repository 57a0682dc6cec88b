import t from 'tap'
import { CHROMIUM_FLAGS, DISABLED_FEATURES, featuresLeftOn } from '../fixtures/chromium-flags.ts'

// Engines: one: a pure function of the test fixtures' command line.
// Chromium reads the last --disable-features alone: what playwright-core turns off before ours must be in ours.

t.test("the features an earlier --disable-features turns off that the last leaves on", async (t) => {
  t.same(featuresLeftOn('chromium --disable-features=A,B --headless --disable-features=B,A,C'), [], 'all of them repeated')
  t.same(featuresLeftOn('chromium --disable-features=A,B,D --disable-features=B,C'), ['A', 'D'], 'the ones left out')
  t.same(featuresLeftOn('chromium --disable-features=A --disable-features=B --disable-features=A,C'), ['B'], 'from every list before the last')
  t.same(featuresLeftOn('chromium --headless --disable-features=A'), [], 'one list: nothing before it')
})

t.test("the tests' Chromium turns off the spare renderer in its one list", async (t) => {
  t.ok(DISABLED_FEATURES.includes('SpareRendererForSitePerProcess'))
  t.equal(CHROMIUM_FLAGS.filter((flag) => flag.startsWith('--disable-features=')).length, 1)
  t.equal(CHROMIUM_FLAGS.at(-1), `--disable-features=${DISABLED_FEATURES.join(',')}`, 'last, so that it is the one Chromium reads')
})
