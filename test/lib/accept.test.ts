import t from 'tap'
import { JSON_MEDIA_TYPE, negotiateMediaType, V1_MEDIA_TYPE } from '../../lib/accept.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('v1, JSON and anything select version 1', async (t) => {
  t.equal(negotiateMediaType('application/vnd.service-v1+json'), V1_MEDIA_TYPE)
  t.equal(negotiateMediaType('Application/Vnd.Service-V1+JSON'), V1_MEDIA_TYPE, 'media types are case-insensitive')
  t.equal(negotiateMediaType('application/vnd.service+json'), V1_MEDIA_TYPE, 'unversioned vendor type is the current version')
  t.equal(negotiateMediaType(undefined), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType(''), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/json'), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/json; charset=utf-8'), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('*/*'), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/*'), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('text/html, */*;q=0.1'), JSON_MEDIA_TYPE, 'what curl and browsers send')
})

t.test('another version or no JSON at all is not acceptable', async (t) => {
  t.equal(negotiateMediaType('application/vnd.service-v2+json'), null)
  t.equal(negotiateMediaType('application/vnd.service-v0+json'), null)
  t.equal(negotiateMediaType('application/vnd.other-v1+json'), null)
  t.equal(negotiateMediaType('text/html'), null)
  t.equal(negotiateMediaType('text/plain, image/png'), null)
  t.equal(negotiateMediaType('application/json;q=0'), null, 'q=0 means not acceptable')
  t.equal(negotiateMediaType('garbage'), null)
  t.equal(negotiateMediaType(',,,;;;'), null)
})

t.test('quality values decide; the versioned type wins a tie', async (t) => {
  t.equal(negotiateMediaType('application/json, application/vnd.service-v1+json'), V1_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/vnd.service-v1+json;q=0.5, application/json'), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/json;q=0.4, application/vnd.service-v1+json;q=0.9'), V1_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/vnd.service-v2+json, application/json;q=0.5'), JSON_MEDIA_TYPE, 'v2 with a JSON fallback')
  t.equal(negotiateMediaType('application/json;q=2'), null, 'a malformed quality is ignored')
  t.equal(negotiateMediaType('application/json;q=abc, */*;q=0.2'), JSON_MEDIA_TYPE)
  t.equal(negotiateMediaType('application/vnd.service-v1+json;q=1.000'), V1_MEDIA_TYPE)
})
