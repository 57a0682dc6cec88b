import type { Clock } from '../lib/clock.ts'
import type { FaultScope } from './faults.ts'

// What every command of the service-desk command line is made of.

export interface Io {
  stdout(text: string): void
  stderr(text: string): void
  env: Record<string, string | undefined>
  readStdin(): Promise<string>
  clock: Clock
}

/** One option of a command, as its help shows it. */
export type Option = (
  | { type: 'boolean' }
  | {
      type: 'string'
      /** What the value is, as the help names it: N, TEXT, ADDRESS. */
      value: string
      /** Given more than once, every value is kept. */
      multiple?: boolean
    }
) & {
  /** What it is for, one line. */
  about: string
  /** What holds when it is not given, where that is something. */
  fallback?: string
  /** The environment variable it stands for (the option wins). */
  variable?: string
}

export type Options = Record<string, Option>
export type Values = Record<string, string | boolean | undefined>

export interface Command {
  /** The words that name it, e.g. ['token', 'create']. */
  words: string[]
  /** Positional arguments, as shown in the usage line. */
  args: string[]
  optionalArgs?: number
  options: Options
  usage: string
  summary: string
  /** Resolves to the exit code, or undefined when the process keeps running (serve). */
  run(args: string[], values: Values, io: Io): Promise<number | undefined>
  /**
   * What the command tells when a storage fault stopped it (cli/faults.ts), where it differs from
   * "the database file; nothing was changed".
   */
  faultScope?(args: string[], values: Values, io: Io): Partial<FaultScope>
}

/** Raised for a command line that does not fit the command: exit 2 with its message. */
export class UsageError extends Error {}


/** --db, which every command that opens the database takes. */
export const DB_OPTION: Options = {
  db: {
    type: 'string',
    value: 'ADDRESS',
    about: "the database: a SQLite file's path, or a postgres:// address (which needs SERVICE_SECRET)",
    fallback: './data/service.db',
    variable: 'SERVICE_DB',
  },
}
