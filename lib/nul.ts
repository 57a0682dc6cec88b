// PostgreSQL text cannot hold the character U+0000; SQLite's can. So no text the service keeps
// holds it, on either engine (docs/decisions.md, "Decided while building"): the API schemas and
// the stores' validators refuse it, look-ups by a value holding it find nothing without asking the
// database, and an error of PostgreSQL about it that gets past them all is a 400, never a 500.

/** Why a value holding U+0000 is refused, as words that follow the field name. */
export const NUL_PROBLEM = 'must not contain the character U+0000'

/** Whether the text holds U+0000, which no stored text can hold: a look-up by it finds nothing. */
export function holdsNul(text: string): boolean {
  return text.includes('\u0000')
}

/** The text without any U+0000. */
export function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '')
}

// character_not_in_repertoire (a U+0000 sent as a parameter) and untranslatable_character (a \u0000
// escape in jsonb). drizzle wraps the driver's error; its cause carries the code.
const UNSTORABLE = new Set(['22021', '22P05'])

/** The PostgreSQL code when the error says text held a character the database cannot store; else null. */
export function unstorableTextCode(error: unknown): string | null {
  for (const e of [error, (error as { cause?: unknown } | null)?.cause]) {
    const code = (e as { code?: unknown } | null | undefined)?.code
    if (typeof code === 'string' && UNSTORABLE.has(code)) return code
  }
  return null
}
