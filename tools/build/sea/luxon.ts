import { DateTime } from 'luxon'

// Stands in for lib/luxon.ts inside the single executable (tools/build/binary.ts swaps the modules):
// esbuild bundles everything into one script there, and a require() of a package could not be
// resolved in a file with no node_modules beside it. The same names as lib/luxon.ts
// (test/house/sea-modules.test.ts compares them).

/** luxon's DateTime. */
export function dateTime(): typeof DateTime {
  return DateTime
}
