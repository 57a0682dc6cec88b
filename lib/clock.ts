/** Milliseconds since the epoch. Injected everywhere time matters, so expiry is tested without waiting. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()

export const DAY_MS = 24 * 60 * 60 * 1000

/** A moment as people read it on the pages, in mails and at the command line: `2026-11-25 18:29 UTC`. */
export function shownMoment(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}
