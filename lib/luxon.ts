import { createRequire } from 'node:module'

// luxon (business time's zones and calendars, lib/business-time.ts) is taken at its first use, not
// by every start: its source alone is half a megabyte of heap, kept as two bytes a character, and a
// process computes no business time before a write or a report asks for it (docs/decisions.md,
// "What a start paid for without asking"). Its CommonJS build, one file, by require: every caller
// of business time is synchronous. The single executable, which has no node_modules beside it,
// takes it from tools/build/sea/luxon.ts instead (tools/build/binary.ts swaps the modules).
const require = createRequire(import.meta.url)
let loaded: typeof import('luxon') | undefined

/** luxon's DateTime, loaded at the first call. */
export function dateTime(): typeof import('luxon').DateTime {
  return (loaded ??= require('luxon') as typeof import('luxon')).DateTime
}
