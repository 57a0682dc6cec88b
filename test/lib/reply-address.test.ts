import t from 'tap'
import { createSecretBox } from '../../lib/secret-box.ts'
import { untagged } from '../../lib/mail.ts'
import { notificationMessageId, notifiedAbout, noteMarked, readReplyAddress, replyAddress, replyAddressesIn } from '../../lib/reply-address.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// A supporter's reply address (lib/reply-address.ts): made under the server key, read back only
// when its digest is the key's, for the discussion and the person it was made for.

const { digest } = createSecretBox('a server secret of the tests, thirty-two or more characters')
const other = createSecretBox('another server secret, thirty-two characters or more').digest

t.test('made and read back; any change to it, or another key, reads as no reply address', async (t) => {
  const address = replyAddress(digest, { mailbox: 'Support@Acme.Example', number: 1042, userId: 7 })
  t.match(address, /^Support\+r-sy-7-[0-9a-f]{24}@Acme\.Example$/, 'a subaddress of the mailbox: the number and the user in base 36')
  t.same(readReplyAddress(digest, address), { mailbox: 'support@acme.example', number: 1042, userId: 7 }, 'read back, whatever the case a mail program gives it')
  t.same(readReplyAddress(digest, address.toUpperCase()), { mailbox: 'support@acme.example', number: 1042, userId: 7 })
  t.equal(untagged(address.toLowerCase()), 'support@acme.example', 'delivered to the mailbox')
  t.equal(readReplyAddress(other, address), undefined, "another server's key")
  t.equal(readReplyAddress(digest, address.replace('-sy-', '-sz-')), undefined, 'another discussion')
  t.equal(readReplyAddress(digest, address.replace('-7-', '-8-')), undefined, 'another person')
  t.equal(readReplyAddress(digest, address.replace('@Acme.Example', '@acme.example.evil')), undefined, "another domain's mailbox")
  t.equal(readReplyAddress(digest, address.replace(/([0-9a-f])@/, (_, last: string) => `${last === '0' ? '1' : '0'}@`)), undefined, 'one character of the digest')
  t.equal(readReplyAddress(digest, address.replace(/[0-9a-f]@/, '@')), undefined, 'a digest cut short')
  for (const plain of ['support@acme.example', 'support+r-1-2-zz@acme.example', 'r-1-2-0123456789abcdef01234567@acme.example', 'support+r-1-2-0123456789abcdef01234567']) {
    t.equal(readReplyAddress(digest, plain), undefined, plain)
  }
  t.equal(readReplyAddress(digest, `support+r-${'z'.repeat(11)}-1-0123456789abcdef01234567@acme.example`), undefined, 'a number past what is safe')
  t.equal(untagged('support@acme.example'), 'support@acme.example')
  t.equal(untagged('odd"+"name@acme.example'), 'odd"@acme.example')
  t.equal(untagged('no-at+all'), 'no-at+all', 'a plus after the last @ (or without one) is not a tag')
  // A mailbox whose own address has a tag: its reply addresses add one more, read from the last.
  const tagged = replyAddress(digest, { mailbox: 'team+help@gmail.example', number: 3, userId: 4 })
  t.same(readReplyAddress(digest, tagged), { mailbox: 'team+help@gmail.example', number: 3, userId: 4 })
  t.equal(untagged(tagged), 'team+help@gmail.example')
})

t.test('found among the headers, at most ten', async (t) => {
  const one = replyAddress(digest, { mailbox: 'support@acme.example', number: 1, userId: 2 })
  t.same(replyAddressesIn([`"Bob" <${one}>, carol@customer.example`, `{"value":[{"address":"${one}"}]}`]), [one, one])
  t.same(replyAddressesIn(['support@acme.example', 'support+other@acme.example']), [])
  t.equal(replyAddressesIn([Array.from({ length: 50 }, () => one).join(', ')]).length, 10)
})

t.test("a notification's Message-ID names its discussion with a digest", async (t) => {
  const id = notificationMessageId(digest, 3, 12, 'support@acme.example', 'a1b2c3')
  t.match(id, /^<notify\.12\.[0-9a-f]{16}\.a1b2c3@acme\.example>$/)
  t.equal(notifiedAbout(digest, 3, ['<first@customer.example>', id]), 12)
  t.equal(notifiedAbout(digest, 4, [id]), undefined, "another site's")
  t.equal(notifiedAbout(other, 3, [id]), undefined, "another server's key")
  t.equal(notifiedAbout(digest, 3, [id.replace('notify.12.', 'notify.13.')]), undefined, 'another number')
  t.equal(notifiedAbout(digest, 3, []), undefined)
})

t.test('#note makes an answer an internal note', async (t) => {
  t.same(noteMarked('#note\nCall the vendor.'), { internal: true, body: 'Call the vendor.' })
  t.same(noteMarked('  #NOTE: call the vendor.'), { internal: true, body: 'call the vendor.' })
  t.same(noteMarked('#note'), { internal: true, body: '(The note has no text.)' })
  t.same(noteMarked('#notes are mine'), { internal: false, body: '#notes are mine' }, 'only the word')
  t.same(noteMarked('See #note below'), { internal: false, body: 'See #note below' }, 'only at the start')
})
