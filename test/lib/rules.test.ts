import t from 'tap'
import { actionNamesFrom, conditionsHold, describeAction, fieldChangesOf, readyConditions, timeRuleDue, triggersOf, wordsPattern, type RuleAction, type RuleConditions, type RuleSubject } from '../../lib/rules.ts'

// Engines: one (SQLite): pure functions, no database.
// Issue 70, the pure part of rules: what starts one, whether its conditions hold, what its actions
// change of the fields, and how an action reads.

const subject: RuleSubject = {
  fields: { plan: ['Pro'], products: ['Desk', 'Chat'] },
  state: 'new',
  categoryId: 3,
  channel: 'mail',
  tags: ['billing', 'vip'],
  assigneeId: null,
  authorEmail: 'Carol@Customer.Example',
  awaitingTeam: true,
  title: 'Invoice 2026-11 is wrong',
  message: 'Please send a corrected receipt.',
}
const holds = (conditions: RuleConditions, s: Partial<RuleSubject> = {}) => conditionsHold(readyConditions(conditions), { ...subject, ...s })

t.test('each condition holds or not on its own; none given holds for every discussion', async (t) => {
  t.ok(holds({}))
  const cases: Array<[RuleConditions, boolean, string]> = [
    [{ states: ['new', 'open'] }, true, 'a state among them'],
    [{ states: ['resolved'] }, false, 'another state'],
    [{ categories: [3] }, true, 'its category'],
    [{ categories: [4] }, false, 'another category'],
    [{ channels: ['mail'] }, true, 'its channel'],
    [{ channels: ['web', 'api'] }, false, 'another channel'],
    [{ tags: ['billing', 'vip'] }, true, 'all of the tags'],
    [{ tags: ['billing', 'urgent'] }, false, 'one tag missing'],
    [{ no_tags: ['urgent'] }, true, 'none of these tags'],
    [{ no_tags: ['vip'] }, false, 'one of them carried'],
    [{ owner: 'none' }, true, 'nobody owns it'],
    [{ owner: 'anyone' }, false, 'someone should'],
    [{ owner: [7] }, false, 'a named owner, none there'],
    [{ awaiting: 'team' }, true, 'the team owes the answer'],
    [{ awaiting: 'customer' }, false, 'the customer does not'],
    [{ domains: ['customer.example'] }, true, 'the domain, any case'],
    [{ domains: ['@CUSTOMER.EXAMPLE'] }, true, 'written with an @ and in capitals'],
    [{ domains: ['example'] }, false, 'a part of the domain is not the domain'],
    [{ words: ['invoice'] }, true, 'a word of the title'],
    [{ words: ['RECEIPT'] }, true, 'a word of the message, any case'],
    [{ words: ['corrected  receipt'] }, true, 'a phrase, spaces as any run of spaces'],
    [{ words: ['invoices', 'rece'] }, false, 'parts of words are not words'],
    [{ words: ['2026-11'] }, true, 'punctuation inside a phrase is taken as written'],
    [{ words: ['(a.b*'] }, false, 'what a pattern would read as syntax is text'],
    [{ words: ['  '] }, true, 'blank words ask nothing'],
  ]
  for (const [conditions, expected, what] of cases) t.equal(holds(conditions), expected, what)
  t.ok(holds({ owner: 'anyone' }, { assigneeId: 7 }))
  t.ok(holds({ owner: [7, 8] }, { assigneeId: 7 }))
  t.notOk(holds({ owner: [8] }, { assigneeId: 7 }))
  t.notOk(holds({ owner: 'none' }, { assigneeId: 7 }))
  t.ok(holds({ awaiting: 'customer' }, { awaitingTeam: false }))
  t.notOk(holds({ words: ['receipt'] }, { message: undefined }), 'no message: the title only')
  t.ok(holds({ words: ['ünïcode'] }, { title: 'Ünïcode here' }), 'letters beyond ASCII are word letters')
  t.notOk(holds({ words: ['code'] }, { title: 'Ünïcode here' }), 'so a word inside them is no word')
  t.ok(holds({ fields: { plan: ['Basic', 'Pro'] } }), "a custom field's value is one of these")
  t.ok(holds({ fields: { products: ['Chat'] } }), 'one of several choices is enough')
  t.notOk(holds({ fields: { plan: ['Basic'] } }))
  t.notOk(holds({ fields: { plan: ['Pro'], seats: ['3'] } }), 'every field named: one without a value does not hold')
  t.equal(wordsPattern([]), null)
})

t.test('what starts a rule: the kind of write, and for a change each field that moved', async (t) => {
  t.same(triggersOf({ type: 'discussion.created' }), ['created'])
  t.same(triggersOf({ type: 'comment.created', comment: { bySupporter: false, internal: false } }), ['customer_replied'])
  t.same(triggersOf({ type: 'comment.created', comment: { bySupporter: true, internal: false } }), ['team_replied'])
  t.same(triggersOf({ type: 'comment.created', comment: { bySupporter: true, internal: true } }), ['note_added'])
  const fields = { state: 'new', categoryId: 1, assigneeId: null, tags: '' }
  t.same(triggersOf({ type: 'discussion.updated', discussion: fields }), [], 'a change without its before starts nothing')
  t.same(triggersOf({ type: 'discussion.updated', before: fields, discussion: fields }), [])
  t.same(triggersOf({ type: 'discussion.updated', before: fields, discussion: { state: 'open', categoryId: 2, assigneeId: 5, tags: 'x' } }), ['state_changed', 'category_changed', 'owner_changed', 'tags_changed'])
  t.same(triggersOf({ type: 'discussion.updated', before: { ...fields, fields: '{}' }, discussion: { ...fields, fields: '{"plan":"Pro"}' } }), ['fields_changed'], "its custom fields' values")
  t.same(triggersOf({ type: 'discussion.updated', before: { ...fields, fields: '{"plan":"Pro"}' }, discussion: { ...fields, fields: '{"plan":"Pro"}' } }), [])
  t.same(triggersOf({ type: 'sla.warning' }), ['sla_warning'])
  t.same(triggersOf({ type: 'sla.breached' }), ['sla_breached'])
  t.same(triggersOf({ type: 'token.created' }), [])
})

t.test('field actions fold into one change: the last of each field, tags added and removed in order', async (t) => {
  const actions: RuleAction[] = [
    { type: 'add_tags', tags: ['b', 'a'] },
    { type: 'remove_tags', tags: ['vip'] },
    { type: 'set_category', category: 4 },
    { type: 'set_category', category: 5 },
    { type: 'set_owner', owner: 'none' },
    { type: 'set_state', state: 'resolved' },
    { type: 'add_tags', tags: ['a'] },
    { type: 'notify', to: 'team' },
  ]
  t.same(fieldChangesOf(actions, ['vip', 'billing']), { tags: ['a', 'b', 'billing'], categoryId: 5, owner: null, state: 'resolved' })
  t.same(fieldChangesOf([{ type: 'set_owner', owner: 'round_robin' }], []), { owner: 'round_robin' })
  t.same(fieldChangesOf([{ type: 'set_fields', fields: { plan: 'Pro', seats: 3 } }, { type: 'set_fields', fields: { seats: null } }], []), { fields: { plan: 'Pro', seats: null } }, "custom fields' values, the later action's over the earlier's")
  t.same(fieldChangesOf([{ type: 'set_owner', owner: 9 }], []), { owner: 9 })
  t.same(fieldChangesOf([{ type: 'webhook' }], ['x']), {}, 'no field action: no change, the tags untouched')
})

t.test('each action in words, with the names of what it points at', async (t) => {
  const names = { category: (id: number) => `Category${id}`, person: (id: number) => `Person${id}`, savedReply: (id: number) => `Reply${id}` }
  const actions: Array<[RuleAction, string]> = [
    [{ type: 'set_category', category: 2 }, 'move to Category2'],
    [{ type: 'set_state', state: 'resolved' }, 'resolve'],
    [{ type: 'set_state', state: 'open' }, 'open again'],
    [{ type: 'set_owner', owner: 'none' }, 'give to nobody'],
    [{ type: 'set_owner', owner: 'round_robin' }, "give to the category's next in turn"],
    [{ type: 'set_owner', owner: 3 }, 'give to Person3'],
    [{ type: 'add_tags', tags: ['a', 'b'] }, 'tag a, b'],
    [{ type: 'remove_tags', tags: ['a'] }, 'untag a'],
    [{ type: 'add_note', body: 'x' }, 'add an internal note'],
    [{ type: 'send_reply', saved_reply: 4 }, 'reply with "Reply4"'],
    [{ type: 'mark_spam' }, 'mark spam'],
    [{ type: 'notify', to: 'owner' }, 'notify its owner'],
    [{ type: 'notify', to: 'team' }, 'notify the team'],
    [{ type: 'notify', to: 5 }, 'notify Person5'],
    [{ type: 'webhook' }, 'post a webhook'],
    [{ type: 'set_fields', fields: { plan: 'Pro', products: ['Desk', 'Chat'], vip: null } }, 'set plan to Pro, products to Desk, Chat, no vip'],
  ]
  for (const [action, words] of actions) t.equal(describeAction(action, names), words)
  const site = actionNamesFrom([{ id: 2, name: 'Billing' }], [{ id: 3, name: 'Ann' }], [{ id: 4, title: 'Thanks' }])
  t.same([site.category(2), site.person(3), site.savedReply(4)], ['Billing', 'Ann', 'Thanks'])
  t.same([site.category(9), site.person(9), site.savedReply(9)], ['category 9 (gone)', 'supporter 9 (gone)', 'saved reply 9 (gone)'], 'one gone since says so')
})

t.test('a rule on time is due after its minutes by the clock, and by the business hours when it counts them', async (t) => {
  const anchor = new Date('2026-12-04T16:00:00Z')
  const at = (minutes: number) => new Date(anchor.getTime() + minutes * 60_000)
  t.notOk(timeRuleDue(anchor, at(119), 120, null))
  t.ok(timeRuleDue(anchor, at(120), 120, null))
  // Business minutes are never more than the clock's: the clock's test comes first, then theirs.
  let asked = 0
  const business = (from: Date, to: Date) => (asked++, (to.getTime() - from.getTime()) / 60_000 / 2)
  t.notOk(timeRuleDue(anchor, at(100), 120, business))
  t.equal(asked, 0, 'not yet by the clock: the hours are not counted')
  t.notOk(timeRuleDue(anchor, at(200), 120, business))
  t.ok(timeRuleDue(anchor, at(240), 120, business))
})
