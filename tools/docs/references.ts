import { CONFIG_VARIABLES, SETTINGS } from '../../config.ts'
import { main } from '../../cli/main.ts'
import type { Io } from '../../cli/command.ts'
import { systemClock } from '../../lib/clock.ts'

// The references in docs/reference/, made from the code so that they cannot drift from it:
// every setting from config.ts's table, every command from its own --help. `npm run docs:generate`
// writes them; test/house/references.test.ts fails when the committed ones differ.

export const SETTINGS_REFERENCE = 'docs/reference/settings.md'
export const COMMANDS_REFERENCE = 'docs/reference/commands.md'

const cell = (text: string) => text.replaceAll('|', '\\|')

/** docs/reference/settings.md: one row per setting, its flag of `serve` where it has one. */
export function settingsReference(): string {
  const flags = new Map<string, string>(CONFIG_VARIABLES.map((v) => [v.variable, v.flag]))
  const rows = SETTINGS.map((s) => {
    const flag = flags.get(s.variable)
    return `| \`${s.variable}\` | ${flag ? `\`--${flag}\`` : '(environment only)'} | ${cell(s.fallback)} | ${cell(s.about)} |`
  })
  return [
    '# Settings',
    '',
    '<!-- Made by `npm run docs:generate` from SETTINGS in config.ts; test/house/references.test.ts checks it. -->',
    '',
    'Every setting is an environment variable, and those with a flag take it on `service-desk serve`,',
    'where the flag wins. A bad value stops start-up with one line naming the setting (exit code 2).',
    'What each one is for, with examples: [docs/operations.md](../operations.md).',
    '',
    '| variable | flag | default | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
}

/** What `service-desk <argv>` prints on its standard output. */
async function printed(argv: string[]): Promise<string> {
  let out = ''
  // Whatever the command says goes into the reference, a complaint too, so that a test sees it.
  const write = (text: string) => void (out += text)
  /* c8 ignore next: a command's help reads no input */
  const readStdin = async () => ''
  const io: Io = { stdout: write, stderr: write, env: {}, readStdin, clock: systemClock }
  await main(argv, io)
  return out
}

/** docs/reference/commands.md: the overview, then each command's own help, as the command prints them. */
export async function commandsReference(): Promise<string> {
  const overview = await printed(['--help'])
  const usages = [...overview.matchAll(/^ {2}(\S.*)$/gm)].map((m) => m[1]!).filter((line) => !line.startsWith('--'))
  const sections: string[] = []
  for (const usage of usages) {
    const words: string[] = []
    for (const word of usage.split(' ')) {
      if (!/^[a-z][a-z-]*$/.test(word)) break
      words.push(word)
    }
    sections.push(`## service-desk ${words.join(' ')}`, '', '```', (await printed([...words, '--help'])).trimEnd(), '```', '')
  }
  return [
    '# Commands',
    '',
    '<!-- Made by `npm run docs:generate` from the commands\' own --help; test/house/references.test.ts checks it. -->',
    '',
    'In a checkout the command is `npx service-desk`; installed, `service-desk`; the single executable',
    'takes the same commands. How they fit together: [docs/operations.md](../operations.md#command-line).',
    '',
    '```',
    overview.trimEnd(),
    '```',
    '',
    ...sections,
  ].join('\n')
}
