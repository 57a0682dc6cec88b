import t from 'tap'
import { StoreError } from '../../db/stores/errors.ts'
import { checkReason, filterFromParams, INVENTORY_PAGE_SIZE, inventoryPage, MAX_REASON, MAX_REVOKED_AT_ONCE, revocationTargets, sortColumns, type InventoryEntry } from '../../db/stores/inventory-rules.ts'
import { changedPolicy, checkTokenMaxDays, checkTokenPolicy, DEFAULT_POLICY, defaultExpiry, expiryChoices, policyDifference, switchedOff } from '../../db/stores/site-policy.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 34: the pure rules of the token policy and of the credentials inventory.

const DAY = 86_400_000
const NOW = Date.UTC(2026, 10, 26)

t.test('the lifetimes a policy offers, and its default', async (t) => {
  t.same(expiryChoices(365), [7, 30, 90, 365])
  t.same(expiryChoices(30), [7, 30])
  t.same(expiryChoices(45), [7, 30, 45], 'the limit itself where it is not a usual one')
  t.same(expiryChoices(1), [1])
  t.equal(defaultExpiry(365, 90), 90)
  t.equal(defaultExpiry(30, 90), 30, 'the longest allowed when the usual default is too long')
})

t.test('a new token under the policy', async (t) => {
  const tight = { ...DEFAULT_POLICY, tokenMaxDays: 30, writeTokens: 'administrators' as const }
  t.doesNotThrow(() => checkTokenPolicy(tight, { access: 'read', expiresInDays: 30 }, false))
  t.throws(() => checkTokenPolicy(tight, { access: 'read', expiresInDays: 90 }, true), { code: 'invalid', field: 'expires', message: "expiry must be 7, 30 days (this site's token policy allows at most 30 days)" })
  t.throws(() => checkTokenPolicy(DEFAULT_POLICY, { access: 'read', expiresInDays: 60 }, false), { message: 'expiry must be 7, 30, 90, 365 days' })
  t.throws(() => checkTokenPolicy(tight, { access: 'write', expiresInDays: 7 }, false), { code: 'forbidden', field: 'access' })
  t.doesNotThrow(() => checkTokenPolicy(tight, { access: 'write', expiresInDays: 7 }, true), 'an administrator may')
  t.doesNotThrow(() => checkTokenPolicy(DEFAULT_POLICY, { access: 'write', expiresInDays: 7 }, false), 'everyone may by default')
})

t.test('a change of policy: checked, applied, described', async (t) => {
  for (const days of [0, 366, 1.5, NaN]) t.throws(() => checkTokenMaxDays(days), { code: 'invalid', field: 'max_token_days' }, String(days))
  t.throws(() => changedPolicy(DEFAULT_POLICY, { writeTokens: 'nobody' as never }), { field: 'write_tokens', code: 'invalid' })
  const after = changedPolicy(DEFAULT_POLICY, { tokenMaxDays: 30, passwordOn: false, multipassOn: undefined })
  t.same(after, { ...DEFAULT_POLICY, tokenMaxDays: 30, passwordOn: false }, 'undefined changes nothing')
  t.same(policyDifference(DEFAULT_POLICY, after), { max_token_days: '365 -> 30', password: 'true -> false' })
  t.same(policyDifference(after, after), {})
})

t.test('which methods a policy switches off', async (t) => {
  const off = { ...DEFAULT_POLICY, legacyTokenOn: false, multipassOn: false, passwordOn: false }
  t.equal(switchedOff(off, 'legacy_token'), 'legacy_token')
  t.equal(switchedOff(off, 'multipass'), 'multipass')
  t.equal(switchedOff(off, 'password'), 'password')
  for (const method of ['personal_token', 'oauth_token', 'constructor', '__proto__']) t.equal(switchedOff(off, method), undefined, `${method} always passes`)
  t.equal(switchedOff(DEFAULT_POLICY, 'password'), undefined)
})

function entry(n: number, over: Partial<InventoryEntry> = {}): InventoryEntry {
  return {
    id: `pat-${n}`,
    kind: 'personal_token',
    ownerId: n,
    owner: `user${n}@example.test`,
    ownerName: `User ${n}`,
    name: `token ${n}`,
    access: 'read',
    createdAt: new Date(NOW - n * DAY),
    lastUsedAt: null,
    lastUsedFrom: null,
    expiresAt: new Date(NOW + n * DAY),
    state: 'active',
    revocable: true,
    ...over,
  }
}

t.test('the inventory: filters, every sort column both ways, pages', async (t) => {
  const used = entry(1, { lastUsedAt: new Date(NOW - 2 * DAY), access: 'write', kind: 'oauth', id: 'oauth-x' })
  const old = entry(2, { lastUsedAt: new Date(NOW - 100 * DAY), owner: 'Ann@Example.test' })
  const legacy = entry(3, { kind: 'legacy_token', id: 'legacy-3', expiresAt: null, revocable: false, state: 'expired' })
  const all = [used, old, legacy]
  const ids = (filter: Parameters<typeof inventoryPage>[1]) => inventoryPage(all, filter, NOW).entries.map((e) => e.id)
  t.same(ids({}), ['oauth-x', 'pat-2', 'legacy-3'], 'newest created first by default')
  t.same(ids({ owner: ' ann@EXAMPLE ' }), ['pat-2'], 'owner: a part of the email, in any case')
  t.same(ids({ kind: 'oauth' }), ['oauth-x'])
  t.same(ids({ access: 'write' }), ['oauth-x'])
  t.same(ids({ unusedDays: 30 }), ['pat-2', 'legacy-3'], 'unused: old use or never')
  t.same(ids({ expiresWithinDays: 1 }), ['oauth-x'], 'expires within: active ones only')
  t.same(ids({ expiresWithinDays: 10 }), ['oauth-x', 'pat-2'])
  for (const column of sortColumns) {
    const up = ids({ sort: column, descending: false })
    const down = ids({ sort: column, descending: true })
    t.same(down, [...up].reverse(), `${column}: one order each way`)
  }
  t.same(ids({ sort: 'expires' }), ['oauth-x', 'pat-2', 'legacy-3'], 'no expiry sorts last')
  t.same(ids({ sort: 'last_used' }), ['legacy-3', 'pat-2', 'oauth-x'], 'never used sorts first')

  const many = Array.from({ length: INVENTORY_PAGE_SIZE + 5 }, (_, i) => entry(i + 10))
  t.match(inventoryPage(many, {}, NOW), { total: INVENTORY_PAGE_SIZE + 5, page: 1, pages: 2 })
  t.equal(inventoryPage(many, { page: 2 }, NOW).entries.length, 5)
  t.equal(inventoryPage(many, { page: 99 }, NOW).page, 2, 'a page past the end is the last')
  t.match(inventoryPage([], {}, NOW), { total: 0, page: 1, pages: 1 })
  t.equal(inventoryPage(many, {}, NOW, Number.POSITIVE_INFINITY).entries.length, INVENTORY_PAGE_SIZE + 5, 'one page for the command line')
})

t.test('the filter asked by parameters, each value that is not one left out', async (t) => {
  t.same(filterFromParams({ owner: ' ann ', kind: 'oauth', access: 'write', unused_days: '30', expires_within_days: 7, sort: 'owner', direction: 'desc', page: '2' }), {
    owner: 'ann',
    kind: 'oauth',
    access: 'write',
    unusedDays: 30,
    expiresWithinDays: 7,
    sort: 'owner',
    descending: true,
    page: 2,
  })
  t.same(filterFromParams({ owner: '  ', kind: 'admin', access: 'all', unused_days: '-1', expires_within_days: '99999', sort: 'password', direction: 'up', page: '0' }), {
    owner: undefined,
    kind: undefined,
    access: undefined,
    unusedDays: undefined,
    expiresWithinDays: undefined,
    sort: undefined,
    descending: undefined,
    page: undefined,
  })
  t.equal(filterFromParams({ direction: 'asc', kind: ['oauth'] }).descending, false)
  t.equal(filterFromParams({ kind: ['oauth'] }).kind, undefined, 'a repeated parameter is none')
})

t.test('a revocation: a reason, and every target revocable', async (t) => {
  t.equal(checkReason('  left the team '), 'left the team')
  for (const reason of ['', '   ', 'x'.repeat(MAX_REASON + 1), 'a\u0000b']) t.throws(() => checkReason(reason), { field: 'reason', code: 'invalid' })
  const live = entry(1)
  const ended = entry(2, { state: 'revoked' })
  const legacy = entry(3, { id: 'legacy-3', kind: 'legacy_token', revocable: false })
  const entries = [live, ended, legacy]
  t.same(revocationTargets(entries, ['pat-1', 'pat-1']), [live], 'named twice, revoked once')
  t.throws(() => revocationTargets(entries, []), { code: 'invalid' })
  t.throws(() => revocationTargets(entries, Array.from({ length: MAX_REVOKED_AT_ONCE + 1 }, (_, i) => `pat-${i}`)), { code: 'invalid' })
  t.throws(() => revocationTargets(entries, ['pat-1', 'pat-99']), { code: 'not_found', message: 'there is no credential pat-99 on this site' })
  t.throws(() => revocationTargets(entries, ['legacy-3']), { code: 'invalid' })
  t.throws(() => revocationTargets(entries, ['pat-2']), { code: 'conflict' })
  t.throws(() => revocationTargets(entries, ['pat-2']), StoreError)
})
