import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { buildBinary } from '../build/binary.ts'
import { CACHE } from './datasets.ts'
import { benchEnv } from './service-cli.ts'

// The second form of the service measured: the single executable that small teams deploy
// (`npm run build:binary`, README "Deploy as one file"), built afresh at the start of every run
// from this checkout. It unpacks its native addons, migrations and views into
// $XDG_CACHE_HOME/service-desk/<version>-<hash>/ at its first start and checks them at every
// start after that; the run points XDG_CACHE_HOME at a folder of its own and starts the file once
// before anything is timed, so every start measured is a normal one (already unpacked), as on a
// server after its first start.

const ROOT = join(CACHE, 'binary')

export interface Binary {
  file: string
  /** What the executable needs in its environment: its own cache folder. */
  env: Record<string, string>
  bytes: number
  buildSeconds: number
  /** The first start (`--version`), which unpacks: not timed with the others. */
  unpackMs: number
}

/** Builds and unpacks the executable; why not, when the platform or the build does not allow it. */
export async function prepareBinary(): Promise<Binary | { skipped: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { skipped: `the single executable is built on linux-x64 only, not ${process.platform}-${process.arch}` }
  const started = performance.now()
  let built: Awaited<ReturnType<typeof buildBinary>>
  try {
    built = await buildBinary(join(ROOT, 'service-desk-linux-x64'))
  } catch (error) {
    return { skipped: `the single executable could not be built: ${(error as Error).message.split('\n')[0]}` }
  }
  const buildSeconds = (performance.now() - started) / 1000
  // A fresh cache folder every run, so the unpacking below is the one every later start finds.
  const xdg = join(ROOT, 'xdg')
  rmSync(xdg, { recursive: true, force: true })
  mkdirSync(xdg, { recursive: true, mode: 0o700 })
  const env = { XDG_CACHE_HOME: xdg }
  const first = performance.now()
  try {
    execFileSync(built.file, ['--version'], { env: { ...benchEnv(), ...env }, stdio: 'pipe' })
  } catch (error) {
    return { skipped: `the single executable does not run: ${(error as Error).message.split('\n')[0]}` }
  }
  const unpackMs = performance.now() - first
  const unpacked = readdirSync(join(xdg, 'service-desk'))
  if (unpacked.length !== 1 || !existsSync(join(xdg, 'service-desk', unpacked[0], 'native', 'better_sqlite3.node'))) {
    return { skipped: `the single executable did not unpack into ${xdg}` }
  }
  return { file: built.file, env, bytes: built.size, buildSeconds, unpackMs }
}
