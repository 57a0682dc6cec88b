import type { SpecialDay } from '../db/stores/schedules.ts'

// A country's public holidays (issue 68; docs/decisions.md, "Business hours"), to prefill a
// schedule's days off once, then edited as any other date: from date-holidays (the calendars of
// some 200 countries and their regions), loaded on first use (docs/decisions.md, "Loaded on first
// use"): a service that never asks pays nothing for its data.

type Holidays = { getHolidays(year: number): Array<{ date: string; name: string; type: string }>; getCountries(): Record<string, string>; getStates(country: string): Record<string, string> | undefined }
let library: Promise<new (country?: string, state?: string) => Holidays> | undefined

/**
 * The public holidays of a country (ISO 3166 code: DE) or one of its regions (DE-BE), the year of
 * `now` and the next, as days off by date; undefined for a place the calendars do not know.
 */
export async function publicHolidays(place: string, now: number): Promise<Record<string, SpecialDay> | undefined> {
  const year = new Date(now).getUTCFullYear()
  const years = [year, year + 1]
  const match = /^([A-Za-z]{2})(?:-([A-Za-z0-9]{1,3}))?$/.exec(place)
  if (!match) return undefined
  library ??= import('date-holidays').then((m) => (m.default ?? m) as unknown as new (country?: string, state?: string) => Holidays)
  const Calendar = await library
  const country = match[1]!.toUpperCase()
  const region = match[2]?.toUpperCase()
  const known = new Calendar()
  if (!(country in known.getCountries())) return undefined
  if (region !== undefined && !(region in (known.getStates(country) ?? {}))) return undefined
  const calendar = region === undefined ? new Calendar(country) : new Calendar(country, region)
  const days: Record<string, SpecialDay> = {}
  for (const year of years) {
    for (const holiday of calendar.getHolidays(year)) {
      // Whole public holidays ("2026-12-25 00:00:00"); a half day ("... 14:00:00") is left to the team to write.
      if (holiday.type === 'public' && holiday.date.endsWith(' 00:00:00')) days[holiday.date.slice(0, 10)] = { name: holiday.name.slice(0, 100), hours: [] }
    }
  }
  return days
}
