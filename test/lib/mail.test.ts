import t from 'tap'
import { automaticReason, hasNewText, isMailAddress, isSmtpUrl, newPart, normalAddress, parseImapUrl, shownImap, shownSmtp, spamReason, titleOf } from '../../lib/mail.ts'
import { patternsOf, senderPattern } from '../../db/stores/senders.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { failureWords } from '../../lib/imap.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

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
  t.equal(hasNewText('Thanks!\n\nOn Fri, Ann wrote:\n> Unplug it.'), true)
  t.equal(hasNewText('\n\nOn Fri, Ann wrote:\n> Unplug it.\n\nThanks, under the quote.'), false, 'written under the quote: nothing above it')
  t.equal(newPart('\n\nOn Fri, Ann wrote:\n> Unplug it.'), 'On Fri, Ann wrote:\n> Unplug it.', 'newPart falls back to the whole text')
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

t.test('an IMAP mailbox from its address, shown without its password; SMTP addresses', async (t) => {
  t.same(parseImapUrl('imaps://support%40acme.example:p%40ss%2Fword@imap.gmail.com/INBOX'), { host: 'imap.gmail.com', port: 993, secure: true, user: 'support@acme.example', password: 'p@ss/word', folder: 'INBOX' })
  t.same(parseImapUrl('imap://u:p@mail.example'), { host: 'mail.example', port: 143, secure: false, user: 'u', password: 'p', folder: 'INBOX' }, 'STARTTLS port, INBOX by default')
  t.same(parseImapUrl('imaps://u:p@[2001:db8::1]:1993/Support%20Mail'), { host: '2001:db8::1', port: 1993, secure: true, user: 'u', password: 'p', folder: 'Support Mail' })
  for (const bad of ['not a url', 'https://u:p@mail.example', 'imap://', 'imap://u:p@']) t.match(parseImapUrl(bad), /^must be an imap:\/\/ or imaps:\/\/ address/, bad)
  for (const bad of ['imaps://mail.example/INBOX', 'imaps://u@mail.example', 'imaps://:p@mail.example']) t.match(parseImapUrl(bad), /^must name the user and the password/, bad)
  t.notMatch(String(parseImapUrl('https://u:hunter2@mail.example')), 'hunter2', 'a refusal never repeats the address')

  t.equal(shownImap({ host: 'imap.gmail.com', port: 993, secure: true, user: 'support@acme.example', password: 'x', folder: 'INBOX' }), 'imaps://support%40acme.example@imap.gmail.com:993/INBOX')
  t.equal(shownImap({ host: '2001:db8::1', port: 143, secure: false, user: 'u', password: 'x', folder: 'Support Mail' }), 'imap://u@[2001:db8::1]:143/Support%20Mail')
  t.ok(isSmtpUrl('smtp://u:p@smtp.example:587'))
  t.ok(isSmtpUrl('smtps://smtp.example'))
  for (const bad of ['smtp.example:25', 'http://smtp.example', 'smtp://']) t.notOk(isSmtpUrl(bad), bad)
  t.equal(shownSmtp('smtp://mailer:s3cret@smtp.example:587'), 'smtp://mailer@smtp.example:587')
})

t.test('what a mail server failure says, in words', async (t) => {
  t.equal(failureWords(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ESOCKET' })), 'the server refused the connection', "nodemailer's")
  t.equal(failureWords({ code: 'ECONNREFUSED' }), 'the server refused the connection')
  t.equal(failureWords({ code: 'ENOTFOUND' }), 'the server name was not found')
  t.equal(failureWords({ code: 'EAI_AGAIN' }), 'the server name was not found')
  for (const code of ['ETIMEDOUT', 'CONNECT_TIMEOUT', 'GREETING_TIMEOUT']) t.equal(failureWords({ code }), 'the server did not answer in time', code)
  t.equal(failureWords({ responseText: 'Authentication failed.', message: 'Command failed' }), 'Authentication failed.', "the IMAP server's own words first")
  t.equal(failureWords({ response: '535 5.7.8 Bad credentials', message: 'Invalid login' }), '535 5.7.8 Bad credentials', "the SMTP server's")
  t.equal(failureWords(new Error('something else')), 'something else')
  t.equal(failureWords(Object.assign(new Error("Mailbox doesn't exist: Nope"), { response: new Error('Command failed') })), "Mailbox doesn't exist: Nope", "imapflow's failed command is not the words")
  t.equal(failureWords('a string'), 'a string')
})

t.test("spam, by the site's word on its sender first, then by a provider's verdict when the operator trusts it", async (t) => {
  const block = { pattern: 'spammer.example', verdict: 'block' as const }
  const allow = { pattern: 'ann@customer.example', verdict: 'allow' as const }
  t.equal(spamReason(headers({}), undefined, true), null, "a person's mail")
  t.equal(spamReason(headers({}), block, false), 'its sender is blocked on this site (spammer.example)', 'a block needs no header, nor the operator\'s trust')
  t.equal(spamReason(headers({ 'x-spam-flag': 'YES' }), allow, true), null, 'an allowed sender is never spam')
  t.equal(spamReason(headers({ 'x-spam-flag': 'YES' }), undefined, true), 'the mail provider marked it spam (X-Spam-Flag)')
  t.equal(spamReason(headers({ 'x-spam-flag': 'YES' }), undefined, false), null, 'SERVICE_MAIL_SPAM_HEADERS=off: not read')
  t.equal(spamReason(headers({ 'x-spam-flag': 'NO' }), undefined, true), null)
  t.equal(spamReason(headers({ 'x-spam-flag': 'yessir' }), undefined, true), null, 'a word that starts with yes is not yes')
  t.equal(spamReason(headers({ 'x-spam-flag': '["YES","NO"]' }), undefined, true), 'the mail provider marked it spam (X-Spam-Flag)', 'given twice: the first')
  t.equal(spamReason(headers({ 'x-spam-status': 'Yes, score=7.2 required=5.0 tests=BAYES_99' }), undefined, true), 'the mail provider marked it spam (X-Spam-Status)')
  t.equal(spamReason(headers({ 'x-spam-status': 'No, score=-0.1' }), undefined, true), null)
  t.equal(spamReason(headers({ 'x-forefront-antispam-report': 'CIP:192.0.2.1;SCL:5;SFV:SPM;H:x' }), undefined, true), 'Microsoft 365 marked it spam (X-Forefront-Antispam-Report)')
  t.equal(spamReason(headers({ 'x-forefront-antispam-report': 'CIP:192.0.2.1;SCL:1;SFV:NSPM;' }), undefined, true), null, 'NSPM is not spam')
})

t.test('sender patterns: an address or a domain, kept in lower case; the patterns that speak for an address, most particular first', async (t) => {
  t.equal(senderPattern(' Ann@Customer.Example '), 'ann@customer.example')
  t.equal(senderPattern('*.Spammer.example'), 'spammer.example')
  t.equal(senderPattern('@spammer.example'), 'spammer.example')
  t.equal(senderPattern('xn--bcher-kva.example'), 'xn--bcher-kva.example', 'an international domain as its ASCII form')
  for (const bad of ['', 'com', 'a@b', 'two words.example', 'bücher.example', '-x.example', 'x-.example', 'a@@b.example', `${'a'.repeat(250)}.example`, 'ann@customer.example\u0000', '<ann@customer.example>']) {
    t.throws(() => senderPattern(bad), StoreError, `refused: ${JSON.stringify(bad)}`)
  }
  t.same(patternsOf('Offers@Mail.Spammer.Example'), ['offers@mail.spammer.example', 'mail.spammer.example', 'spammer.example'], 'never the top-level domain alone')
  t.same(patternsOf('not an address'), [])
  t.same(patternsOf('@nobody.example'), [], 'no local part: nothing')
})
