import t from 'tap'
import { cleanFileName, contentDisposition, detectContentType, MAX_FILE_NAME, shownInline, shownSize, SNIFF_BYTES } from '../../lib/files.ts'
import { PNG } from '../fixtures/files.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a name keeps its last path part, without what could mislead or break a file system', async (t) => {
  const cases: Array<[string, string]> = [
    ['report.pdf', 'report.pdf'],
    ['C:\\Users\\ann\\Desktop\\report.pdf', 'report.pdf'],
    ['../../etc/passwd', 'passwd'],
    ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['tab\there\nand\u0000nul', 'tab here andnul'],
    ['  spaced   out  .txt ', 'spaced out .txt'],
    ['...hidden', 'hidden'],
    ['a<b>c:d"e|f?g*h.txt', 'abcdefgh.txt'],
    ['', 'file'],
    ['///', 'file'],
    ['\u0007\u0008', 'file'],
    ['..', 'file'],
    ['e\u0301te\u0301.txt', 'été.txt'],
    ['\u{1F600} smile.png', '\u{1F600} smile.png'],
  ]
  for (const [raw, clean] of cases) t.equal(cleanFileName(raw), clean, JSON.stringify(raw))

  const long = `${'a'.repeat(300)}.tar.gz`
  const kept = cleanFileName(long)
  t.equal([...kept].length, MAX_FILE_NAME)
  t.ok(kept.endsWith('.gz'), 'a long name keeps its extension')
  t.equal([...cleanFileName('\u{1F600}'.repeat(250))].length, MAX_FILE_NAME, 'counted in characters, not UTF-16 units')
  t.equal([...cleanFileName(`x.${'y'.repeat(300)}`)].length, MAX_FILE_NAME, 'an "extension" past twenty characters is cut too')
})

t.test('Content-Disposition: inline for images named as what they are, an ASCII name and filename* (RFC 6266)', async (t) => {
  t.equal(contentDisposition('cat.png', 'image/png'), 'inline; filename="cat.png"')
  t.equal(contentDisposition('CAT.JPEG', 'image/jpeg'), 'inline; filename="CAT.JPEG"')
  t.equal(contentDisposition('anim.gif', 'image/gif'), 'inline; filename="anim.gif"')
  t.equal(contentDisposition('photo.webp', 'image/webp'), 'inline; filename="photo.webp"')
  t.equal(contentDisposition('cat.exe', 'image/png'), 'attachment; filename="cat.exe"', 'an image named otherwise is downloaded')
  t.equal(contentDisposition('logo.svg', 'image/svg+xml'), 'attachment; filename="logo.svg"', 'never SVG')
  t.equal(contentDisposition('page.html', 'text/html'), 'attachment; filename="page.html"', 'never HTML')
  t.equal(contentDisposition('naïve café.txt', 'text/plain'), `attachment; filename="na_ve caf_.txt"; filename*=UTF-8''na%C3%AFve%20caf%C3%A9.txt`)
  t.equal(contentDisposition("it's (1) *.txt", 'text/plain'), `attachment; filename="it's (1) *.txt"`)
  t.equal(contentDisposition('weird\\"name.txt', 'text/plain'), `attachment; filename="weirdname.txt"; filename*=UTF-8''weird%5C%22name.txt`)
  t.equal(contentDisposition('ü (1)*\'.txt', 'text/plain'), `attachment; filename="_ (1)*'.txt"; filename*=UTF-8''%C3%BC%20%281%29%2A%27.txt`)
  t.ok(shownInline('x.jfif', 'image/jpeg'))
  t.notOk(shownInline('x.png', 'application/octet-stream'))
})

t.test('the type comes from the bytes: signatures, then text told apart', async (t) => {
  t.equal(await detectContentType(PNG), 'image/png')
  t.equal(await detectContentType(Buffer.from('%PDF-1.7\n1 0 obj')), 'application/pdf')
  t.equal(await detectContentType(Buffer.from('PK\u0003\u0004\u0014\u0000\u0000\u0000\u0008\u0000')), 'application/zip')
  t.equal(await detectContentType(Buffer.from('\ufeff  <!doctype html><p>hi')), 'text/html', 'HTML after a BOM and spaces')
  t.equal(await detectContentType(Buffer.from('<script>alert(1)</script>')), 'text/html')
  t.equal(await detectContentType(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>')), 'image/svg+xml')
  t.equal(await detectContentType(Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>')), 'image/svg+xml')
  t.equal(await detectContentType(Buffer.from('<?xml version="1.0"?><invoice/>')), 'application/xml')
  t.equal(await detectContentType(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<?xml version="1.0"?><invoice/>', 'utf16le')])), 'application/xml', 'XML in UTF-16: not UTF-8 text, still XML')
  t.equal(await detectContentType(Buffer.from('just words, ünïcode too\n')), 'text/plain')
  t.equal(await detectContentType(Buffer.alloc(0)), 'text/plain', 'an empty file is empty text')
  t.equal(await detectContentType(Buffer.from([0xff, 0xfe, 0x00, 0x41])), 'application/octet-stream', 'not UTF-8')
  t.equal(await detectContentType(Buffer.from('text\u0000with a NUL')), 'application/octet-stream')
  t.equal(await detectContentType(Buffer.from('\u0001\u0002\u0003 mostly control characters')), 'application/octet-stream')
  // A sample cut inside a character is still text: the cut end is not held against it.
  const cut = Buffer.from(`a${'é'.repeat(SNIFF_BYTES)}`).subarray(0, SNIFF_BYTES)
  t.equal(cut.length, SNIFF_BYTES)
  t.equal(await detectContentType(cut), 'text/plain')
  t.equal(await detectContentType(cut.subarray(0, SNIFF_BYTES - 2)), 'application/octet-stream', 'a whole file cut inside a character is not UTF-8')
})

t.test('sizes as people read them, in the units of the limits', async (t) => {
  t.same([0, 1, 2, 1023, 1024, 1536, 10 * 1024 * 1024, 25.5 * 1024 * 1024, 3 * 1024 ** 3, 5 * 1024 ** 4].map(shownSize), [
    '0 bytes', '1 byte', '2 bytes', '1023 bytes', '1 KB', '1.5 KB', '10 MB', '25.5 MB', '3 GB', '5120 GB',
  ])
})
