import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.ts'
import packageJson from '../package.json' with { type: 'json' }
import { systemClock } from '../lib/clock.ts'
import { StoreError } from '../db/stores/errors.ts'
import { adminCommands } from './admin.ts'
import { administrationCommands } from './administration.ts'
import { backupCommand } from './backup.ts'
import { UsageError, type Command, type Io, type Values } from './command.ts'
import { copyCommand } from './copy.ts'
import { credentialCommands } from './credentials.ts'
import { discussionCommands } from './discussions.ts'
import { mailboxCommands } from './mailboxes.ts'
import { mailProviderCommands } from './mail-providers.ts'
import { invitationCommands } from './invitations.ts'
import { webhookCommands } from './webhooks.ts'
import { senderCommands } from './senders.ts'
import { fieldCommands } from './fields.ts'
import { signInProviderCommands } from './sign-in-providers.ts'
import { customerCommands } from './customers.ts'
import { isPostgresAddress } from '../lib/database-address.ts'
import { databaseFiles, describeFault, NOTHING_CHANGED, ownWords, postgresFix, type FaultScope } from './faults.ts'
import { closest, commandHelp, groupHelp, groupOf, overview } from './help.ts'
import { migrateCommand } from './migrate.ts'
import { oauthClientCommands } from './oauth-clients.ts'
import { securityLogCommands } from './security-log.ts'
import { scheduleCommands } from './schedules.ts'
import { slaCommands } from './sla.ts'
import { reportCommands } from './reports.ts'
import { ruleCommands } from './rules.ts'
import { serveCommand } from './serve.ts'

export { EXIT_BUSY, EXIT_DISK_FULL, EXIT_IO, EXIT_READ_ONLY } from './faults.ts'

export const EXIT_REFUSED = 1
export const EXIT_FAILED = 1
export const EXIT_USAGE = 2

const commands: Command[] = [serveCommand, migrateCommand, ...adminCommands, ...credentialCommands, ...administrationCommands, ...discussionCommands, ...mailboxCommands, ...mailProviderCommands, ...invitationCommands, ...senderCommands, ...fieldCommands, ...signInProviderCommands, ...customerCommands, ...webhookCommands, ...oauthClientCommands, ...securityLogCommands, ...scheduleCommands, ...slaCommands, ...ruleCommands, ...reportCommands, backupCommand, copyCommand]

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

/**
 * A reader that stops early (`service-desk security-log demo | head -4`) closes the pipe: the
 * command ends there, quietly and with 0, as ls and grep do, instead of an unhandled EPIPE.
 */
let endsOnClosedPipe = false
function endOnClosedPipe() {
  if (endsOnClosedPipe) return
  endsOnClosedPipe = true
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error
      process.exit(0)
    })
  }
}
/* c8 ignore stop */

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

/** The fix of a PostgreSQL refusal, as the end of its line: after a full stop. */
function fixOf(error: unknown, address: string | undefined): string {
  const fix = postgresFix(error, address)
  return fix === '' ? '' : `.${fix}`
}

function findCommand(argv: string[]): Command | undefined {
  return commands
    .filter((c) => c.words.every((word, i) => argv[i] === word))
    .sort((a, b) => b.words.length - a.words.length)[0]
}

const isHelp = (word: string | undefined) => word === '--help' || word === '-h'

/**
 * What argv asks for when it names no command: the overview, a group's commands, or help on a
 * command (`help token create`); else the one line that says what went wrong, with the closest
 * command when the words look like a slip.
 */
function withoutCommand(argv: string[], io: Io): number {
  const asked = argv[0] === 'help' ? argv.slice(1) : argv
  if (asked.length === 0 || (argv[0] !== 'help' && isHelp(asked[0]) && asked.length === 1)) {
    io.stdout(overview(commands))
    return 0
  }
  const command = findCommand(asked)
  if (argv[0] === 'help' && command && command.words.length === asked.length) {
    io.stdout(commandHelp(command))
    return 0
  }
  const members = groupOf(commands, asked[0]!)
  if (members.length > 0 && (asked.length === 1 || isHelp(asked[1]))) {
    if (argv[0] === 'help' || isHelp(asked[1])) {
      io.stdout(groupHelp(asked[0]!, members))
      return 0
    }
    const names = members.map((c) => c.words[1]!)
    io.stderr(`service-desk: ${asked[0]} needs one of: ${names.join(', ')} (service-desk ${asked[0]} --help)\n`)
    return EXIT_USAGE
  }
  const typed = asked.filter((word) => !word.startsWith('-'))
  const known = commands.map((c) => c.words.join(' '))
  const near = closest(typed.slice(0, 2).join(' '), known) ?? closest(typed.slice(0, 1).join(' '), known)
  const hint = near === undefined ? '' : ` did you mean "${near}"?`
  io.stderr(`service-desk: unknown command "${asked.join(' ')}";${hint} run service-desk --help\n`)
  return EXIT_USAGE
}

/** Node's argument parser's complaint, in one line of ours: the option, and the closest known one. */
function parseProblem(error: { code: string; message: string }, command: Command): string {
  // Node names an option as '--name', '--name <value>' or '-h, --help'.
  const option = /'(?:-\w, )?(-{1,2}[^' ]+)/.exec(error.message)![1]!
  const name = `service-desk ${command.words.join(' ')}`
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const near = closest(option, [...Object.keys(command.options), 'help'].map((o) => `--${o}`))
    if (near !== undefined) return `unknown option ${option}; did you mean ${near}? (${name} --help lists them)`
    return `unknown option ${option} (${name} --help lists them; a value that begins with - goes after --)`
  }
  if (/does not take an argument/.test(error.message)) return `${option} takes no value (${name} --help)`
  return `${option} needs a value (${name} --help)`
}

export async function main(argv: string[], io: Io = defaultIo): Promise<number | undefined> {
  /* c8 ignore next: the real process's streams (test/cli/pipes.test.ts) */
  if (io === defaultIo) endOnClosedPipe()
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    io.stdout(`service-desk ${packageJson.version}\n`)
    return 0
  }
  const command = argv[0] === 'help' ? undefined : findCommand(argv)
  if (!command) return withoutCommand(argv, io)
  let values: Values = {}
  let positionals: string[] = []
  try {
    // parseArgs takes only what it knows of an option, and nothing undefined.
    const options = Object.fromEntries(Object.entries(command.options).map(([name, option]) => [name, { type: option.type, multiple: option.type === 'string' && option.multiple === true }]))
    ;({ values, positionals } = parseArgs({
      args: argv.slice(command.words.length),
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    }) as { values: Values; positionals: string[] })
    if (values.help) {
      io.stdout(commandHelp(command))
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
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`service-desk: ${parseProblem(error as { code: string; message: string }, command)}\n`)
      return EXIT_USAGE
    }
    if (error instanceof UsageError || error instanceof ConfigError) {
      io.stderr(`service-desk: ${error.message}\n`)
      return EXIT_USAGE
    }
    // Anything else (a file that cannot be opened, a port in use) is still one line, not a trace.
    // A PostgreSQL refusal with a known fix (a role that may not create tables, a database not made yet) says it.
    const address = [values.to, values.db, io.env.SERVICE_DB].find((value) => typeof value === 'string' && isPostgresAddress(value)) as string | undefined
    io.stderr(`service-desk: ${ownWords(error)}${fixOf(error, address)}\n`)
    return EXIT_FAILED
  }
}
