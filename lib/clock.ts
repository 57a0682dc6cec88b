/** Milliseconds since the epoch. Injected everywhere time matters, so expiry is tested without waiting. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()

export const DAY_MS = 24 * 60 * 60 * 1000

/** A moment as people read it on the pages, in mails and at the command line: `2026-11-25 18:29 UTC`. */
export function shownMoment(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

/**
 * The UTC midnight of a day written YYYY-MM-DD, in milliseconds; undefined for anything else.
 * Date.parse rolls 2026-02-30 over to March and reads more than dates: what does not read back
 * the same is not a day of the calendar.
 */
export function dayStart(text: string): number | undefined {
  const at = Date.parse(`${text}T00:00:00Z`)
  return Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== text ? undefined : at
}
