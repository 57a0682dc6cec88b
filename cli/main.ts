import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.ts'
import packageJson from '../package.json' with { type: 'json' }
import { systemClock } from '../lib/clock.ts'
import { StoreError } from '../db/stores/errors.ts'
import { adminCommands } from './admin.ts'
import { backupCommand } from './backup.ts'
import { UsageError, type Command, type Io, type Values } from './command.ts'
import { copyCommand } from './copy.ts'
import { credentialCommands } from './credentials.ts'
import { discussionCommands } from './discussions.ts'
import { databaseFiles, describeFault, EXIT_CODES_HELP, NOTHING_CHANGED, type FaultScope } from './faults.ts'
import { migrateCommand } from './migrate.ts'
import { oauthClientCommands } from './oauth-clients.ts'
import { securityLogCommands } from './security-log.ts'
import { serveCommand } from './serve.ts'

export { EXIT_BUSY, EXIT_DISK_FULL, EXIT_IO, EXIT_READ_ONLY } from './faults.ts'

export const EXIT_REFUSED = 1
export const EXIT_FAILED = 1
export const EXIT_USAGE = 2

const commands: Command[] = [serveCommand, migrateCommand, ...adminCommands, ...credentialCommands, ...discussionCommands, ...oauthClientCommands, ...securityLogCommands, backupCommand, copyCommand]

/* c8 ignore start: the real process's streams; test/cli/serve.test.ts drives them through
   cli/service-desk.js, a process whose coverage is not collected (test/fixtures/child.ts) */
const defaultIo: Io = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  async readStdin() {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  },
  clock: systemClock,
}
/* c8 ignore stop */

function overview(): string {
  const lines = commands.map((c) => `  ${c.usage}\n      ${c.summary}`)
  return [
    'Usage: service-desk <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Every command takes --db ADDRESS (or SERVICE_DB: a SQLite file, or a postgres:// address, which needs SERVICE_SECRET) and --help;',
    '--version prints the version.',
    '',
    EXIT_CODES_HELP,
    '',
  ].join('\n')
}

function help(command: Command): string {
  const options = Object.entries(command.options).map(([name, o]) => `  --${name}${o.type === 'string' ? ' VALUE' : ''}`)
  return [`Usage: service-desk ${command.usage}`, '', command.summary, '', 'Options:', ...options, '  --help', '', EXIT_CODES_HELP, ''].join('\n')
}

/**
 * The files a fault's advice names, and what the command left as it was. Asked only after a fault,
 * which the command met after it had read its settings: they fit.
 */
function faultScope(command: Command, args: string[], values: Values, io: Io): FaultScope {
  const own = command.faultScope?.(args, values, io)
  if (own?.files !== undefined && own.paths !== undefined) return { outcome: NOTHING_CHANGED, ...own } as FaultScope
  const { databaseAddress } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
  return { ...databaseFiles(databaseAddress), outcome: NOTHING_CHANGED, ...own }
}

/** What an error says; a query that failed says what its driver said, without the statement and its values. */
function ownWords(error: unknown): string {
  const { message, query, cause } = error as { message: string; query?: unknown; cause?: unknown }
  return typeof query === 'string' && cause instanceof Error ? cause.message : message
}

function findCommand(argv: string[]): Command | undefined {
  return commands
    .filter((c) => c.words.every((word, i) => argv[i] === word))
    .sort((a, b) => b.words.length - a.words.length)[0]
}

export async function main(argv: string[], io: Io = defaultIo): Promise<number | undefined> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    io.stdout(`service-desk ${packageJson.version}\n`)
    return 0
  }
  const command = findCommand(argv)
  if (!command) {
    const wantsHelp = argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help'
    if (wantsHelp) {
      io.stdout(overview())
      return 0
    }
    io.stderr(`service-desk: unknown command "${argv.join(' ')}"; run service-desk --help\n`)
    return EXIT_USAGE
  }
  let values: Values = {}
  let positionals: string[] = []
  try {
    ;({ values, positionals } = parseArgs({
      args: argv.slice(command.words.length),
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    }) as { values: Values; positionals: string[] })
    if (values.help) {
      io.stdout(help(command))
      return 0
    }
    const required = command.args.length - (command.optionalArgs ?? 0)
    if (positionals.length < required || positionals.length > command.args.length) {
      throw new UsageError(`usage: service-desk ${command.usage}`)
    }
    return await command.run(positionals, values, io)
  } catch (error) {
    // A locked database, a full disk, a file that cannot be written: what, what was not changed, what to do.
    const fault = describeFault(error, () => faultScope(command, positionals, values, io))
    if (fault) {
      io.stderr(fault.message)
      return fault.code
    }
    if (error instanceof StoreError) {
      io.stderr(`service-desk: ${error.message}\n`)
      return EXIT_REFUSED
    }
    if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`service-desk: ${(error as Error).message}\n`)
      return EXIT_USAGE
    }
    // Anything else (a file that cannot be opened, a port in use) is still one line, not a trace.
    io.stderr(`service-desk: ${ownWords(error)}\n`)
    return EXIT_FAILED
  }
}
