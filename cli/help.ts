import type { Command, Option } from './command.ts'
import { EXIT_CODES_HELP } from './faults.ts'

// What the command line says about itself: the overview (with the exit codes, once), a command's
// own help (each option with its meaning, default and variable), a group's commands, and the
// closest known word to a mistyped one.

const WIDTH = 100

/** `text` broken into lines of at most WIDTH columns, each after `indent` spaces (the first too). */
function wrapped(text: string, indent: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > WIDTH) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  lines.push(line)
  return lines.map((l) => `${' '.repeat(indent)}${l}`)
}

const flag = (name: string, option: Option) => `--${name}${option.type === 'string' ? ` ${option.value}` : ''}`

function optionLines(options: Record<string, Option>): string[] {
  const all: Array<[string, string]> = Object.entries(options).map(([name, o]) => {
    const notes = [o.fallback === undefined ? '' : `default: ${o.fallback}`, o.variable === undefined ? '' : `environment: ${o.variable}`].filter(Boolean)
    return [flag(name, o), notes.length === 0 ? o.about : `${o.about} (${notes.join('; ')})`]
  })
  all.push(['-h, --help', 'this help'])
  const width = Math.max(...all.map(([left]) => left.length)) + 2
  return all.flatMap(([left, about]) => {
    const [first, ...rest] = wrapped(about, 2 + width)
    return [`  ${left.padEnd(width)}${first!.trimStart()}`, ...rest]
  })
}

export function overview(commands: Command[]): string {
  return [
    'Usage: service-desk <command> [options]',
    '',
    'Commands:',
    ...commands.flatMap((c) => [`  ${c.usage}`, ...wrapped(c.summary, 6)]),
    '',
    'A command\'s options, with their defaults: service-desk <command> --help (or service-desk help <command>).',
    'Every command takes --db ADDRESS (or SERVICE_DB): a SQLite file, or a postgres:// address, which needs SERVICE_SECRET.',
    '--version prints the version.',
    '',
    EXIT_CODES_HELP,
    '',
  ].join('\n')
}

export function commandHelp(command: Command): string {
  return [
    `Usage: service-desk ${command.usage}`,
    '',
    ...wrapped(command.summary, 0),
    '',
    'Options:',
    ...optionLines(command.options),
    '',
    'Exit codes: service-desk --help.',
    '',
  ].join('\n')
}

/** The commands of a group (`token`: create, list, revoke), or an empty list for a word that names none. */
export function groupOf(commands: Command[], word: string): Command[] {
  return commands.filter((c) => c.words.length > 1 && c.words[0] === word)
}

export function groupHelp(word: string, members: Command[]): string {
  return [
    `Usage: service-desk ${word} <command> [options]`,
    '',
    'Commands:',
    ...members.flatMap((c) => [`  ${c.usage}`, ...wrapped(c.summary, 6)]),
    '',
    `Each one's options: service-desk ${word} <command> --help. Exit codes: service-desk --help.`,
    '',
  ].join('\n')
}

/** Levenshtein's distance between two short words. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    previous = row
  }
  return previous[b.length]!
}

/**
 * The known word closest to `typed`, when it is close enough to be a slip (at most a third of its
 * letters, and at most three, differ); undefined otherwise.
 */
export function closest(typed: string, known: readonly string[]): string | undefined {
  let best: { word: string; d: number } | undefined
  for (const word of known) {
    const d = distance(typed, word)
    if (!best || d < best.d) best = { word, d }
  }
  return best && best.d <= Math.min(3, Math.ceil(typed.length / 3)) ? best.word : undefined
}
