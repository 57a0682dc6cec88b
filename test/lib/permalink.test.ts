import t from 'tap'
import { permalinkProblem } from '../../lib/permalink.ts'
import { createUrls } from '../../lib/urls.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('permalinks: 1 to 63 of a-z 0-9 - _, not reserved', async (t) => {
  for (const ok of ['demo', 'a', 'acme-support_2', 'x'.repeat(63)]) t.equal(permalinkProblem(ok), null, ok)
  for (const bad of ['', 'Demo', 'x'.repeat(64), 'a b', 'a/b', '.well-known', 'openapi.json', 'café']) {
    t.match(permalinkProblem(bad), /1 to 63 characters/, JSON.stringify(bad))
  }
  for (const reserved of ['healthz', 'assets', 'well-known']) t.match(permalinkProblem(reserved), /reserved/, reserved)
})

t.test('addresses come from the configuration and encode odd site segments', async (t) => {
  const urls = createUrls('https://api.example.test', 'https://help.example.test/s/{site}')
  t.equal(urls.site('demo'), 'https://api.example.test/demo')
  t.equal(urls.discussions('demo'), 'https://api.example.test/demo/discussions')
  t.equal(urls.resourceMetadata('demo'), 'https://api.example.test/.well-known/oauth-protected-resource/demo')
  t.equal(urls.siteWeb('demo'), 'https://help.example.test/s/demo')
  t.equal(urls.apiTokensPage('demo'), 'https://help.example.test/s/demo/profile/api_tokens')
  t.equal(urls.site('a"b\\c d'), 'https://api.example.test/a%22b%5Cc%20d')
  t.equal(urls.site('\uD800x'), 'https://api.example.test/%EF%BF%BDx', 'a lone surrogate does not throw')
})
