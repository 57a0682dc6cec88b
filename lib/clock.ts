/** Milliseconds since the epoch. Injected everywhere time matters, so expiry is tested without waiting. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()

export const DAY_MS = 24 * 60 * 60 * 1000
