import { createHash } from 'node:crypto'
import t from 'tap'
import { entityTag, matchHolds, noneMatchHolds } from '../../lib/entity-tags.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test("a tag is the version and a digest of the representation, the same however often it is asked", async (t) => {
  const digest = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 16)
  const representation = 'application/vnd.service-v1+json /demo/discussions?page=2'
  const tag = entityTag('s7', representation)
  t.equal(tag, `"s7-${digest(representation)}"`)
  t.equal(entityTag('s7', representation), tag, 'asked again: the same tag')
  t.not(entityTag('s8', representation), tag, 'another version')
  t.not(entityTag('s7', `${representation}&x`), tag, 'another representation')
  // More representations than are kept: the first is forgotten, and its tag made again alike.
  const first = entityTag('s1', '/0')
  for (let i = 1; i <= 40_000; i++) entityTag('s1', `/${i}`)
  t.equal(entityTag('s1', '/0'), first, 'forgotten and made again: the same')
  t.equal(entityTag('s1', '/40000'), `"s1-${digest('/40000')}"`)
  t.ok(noneMatchHolds(`W/${tag}, "other"`, tag), 'If-None-Match compares weakly')
  t.notOk(matchHolds(`W/${tag}`, tag), 'If-Match strongly')
})
