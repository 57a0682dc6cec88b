import t from 'tap'
import { automaticReason, isMailAddress, newPart, normalAddress, titleOf } from '../../lib/mail.ts'

const headers = (fields: Record<string, string>) => (name: string) => fields[name]

t.test('automatic mail, by its headers: RFC 3834 and what mail programs send instead', async (t) => {
  t.equal(automaticReason(headers({})), null, 'a person’s mail')
  t.equal(automaticReason(headers({ 'auto-submitted': 'no' })), null, 'Auto-Submitted: no is a person’s')
  t.equal(automaticReason(headers({ 'auto-submitted': ' Auto-Replied ' })), 'Auto-Submitted: auto-replied')
  t.equal(automaticReason(headers({ 'x-autoreply': 'yes' })), 'x-autoreply')
  t.equal(automaticReason(headers({ 'x-autorespond': '1' })), 'x-autorespond')
  t.equal(automaticReason(headers({ 'x-auto-response-suppress': 'All' })), 'x-auto-response-suppress')
  for (const precedence of ['bulk', 'JUNK', 'list']) t.equal(automaticReason(headers({ precedence })), `Precedence: ${precedence.toLowerCase()}`)
  t.equal(automaticReason(headers({ precedence: 'first-class' })), null)
  t.equal(automaticReason(headers({ 'list-id': '<news.example.com>' })), 'a mailing list (List-Id)')
  t.equal(automaticReason(headers({}), 'multipart/report; report-type=delivery-status; boundary=x'), 'a delivery status report')
  t.equal(automaticReason(headers({}), 'multipart/report; report-type=disposition-notification'), null, 'a read receipt is not a bounce')
})

t.test('addresses', async (t) => {
  t.equal(normalAddress('  Support@Acme.Example '), 'support@acme.example')
  t.ok(isMailAddress('a@b.example'))
  for (const bad of ['', 'a@b', 'a b@c.example', '@b.example', `${'a'.repeat(250)}@b.example`]) t.notOk(isMailAddress(bad), bad)
})

t.test('a title from a subject', async (t) => {
  t.equal(titleOf('Re: Fwd: AW: [#12] Printer   on fire'), 'Printer on fire')
  t.equal(titleOf('RE[2]: SV: Fw: Invoice'), 'Invoice')
  t.equal(titleOf(undefined), '(no subject)')
  t.equal(titleOf('  Re:  '), '(no subject)')
  t.equal(titleOf('Rebate question'), 'Rebate question', 'a word that begins like a prefix stays')
  const long = titleOf('é'.repeat(300))
  t.equal([...long].length, 200)
  t.ok(long.endsWith('…'))
})

t.test("what is new in a reply: the quoted history and the signature cut", async (t) => {
  t.equal(newPart('Thanks!\n\nOn Fri, 27 Nov 2026 at 12:00, Ann <ann@example.com> wrote:\n> Unplug it.\n'), 'Thanks!')
  t.equal(newPart('Danke!\r\n\r\nAm 27.11.2026 um 12:00 schrieb Ann <ann@example.com>:\r\n> Hallo'), 'Danke!')
  t.equal(newPart('Merci !\n\nLe 27 nov. 2026 à 12:00, Ann a écrit :\n> Bonjour'), 'Merci !')
  t.equal(newPart('Done.\n\n-----Original Message-----\nFrom: Ann'), 'Done.')
  t.equal(newPart('Done.\n\n________________________________\nFrom: Ann\nSent: Friday'), 'Done.')
  t.equal(newPart('Done.\n\nFrom: Ann <ann@example.com>\nSent: Friday, 27 November 2026\nTo: Carol'), 'Done.')
  t.equal(newPart('Yes, this one.\n> the old text\n>> older\n\n'), 'Yes, this one.', 'a quoted block at the end')
  t.equal(newPart('Regards.\n-- \nCarol\nCustomer Inc.'), 'Regards.', 'the signature')
  t.equal(newPart('> only quoted\n> text'), '> only quoted\n> text', 'nothing new: the whole text')
  t.equal(newPart('Line one.\n> a quote in the middle\nLine two.'), 'Line one.\n> a quote in the middle\nLine two.', 'interleaved answers stay')
})
