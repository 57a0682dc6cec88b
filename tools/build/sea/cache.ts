import { createHash, randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join } from 'node:path'

/** What the build packed into the executable: each file's path (also its asset key) and digest. */
export interface Manifest {
  version: string
  /** A digest over every file's name and digest: a new build with other contents gets a new folder. */
  hash: string
  files: { name: string; sha256: string }[]
}

export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

/** $XDG_CACHE_HOME/service-desk, else ~/.cache/service-desk. */
export function cacheRoot(env: Record<string, string | undefined>): string {
  const xdg = env.XDG_CACHE_HOME
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache'), 'service-desk')
}

// Native addons are loaded from these files, so nobody but us (and root) may be able to change
// them: the folder must be ours and closed to group and others. Inside it, everything is ours.
function privateFolder(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  const stat = lstatSync(dir)
  if (!stat.isDirectory()) throw new Error(`${dir} is not a folder`)
  if (stat.uid !== process.getuid!()) throw new Error(`${dir} belongs to another user; remove it or set XDG_CACHE_HOME`)
  if ((stat.mode & 0o022) !== 0) throw new Error(`${dir} is writable by other users; run chmod 700 on it`)
}

function digestOf(file: string): string | undefined {
  try {
    return sha256(readFileSync(file))
  } catch {
    return undefined
  }
}

// A reader (another service-desk process starting at the same moment) sees the old file or the
// whole new one, never half of it.
function writeAtomically(file: string, data: Uint8Array): void {
  const temp = join(dirname(file), `.${randomBytes(6).toString('hex')}.tmp`)
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, data)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    renameSync(temp, file)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
}

/**
 * Makes `<root>/<version>-<hash>` hold exactly the files of the manifest and returns that folder.
 * Every file is checked against its digest at every start; a missing or changed one is written
 * again from the executable's own copy.
 */
export function unpack(manifest: Manifest, asset: (name: string) => Uint8Array, root: string): string {
  mkdirSync(dirname(root), { recursive: true, mode: 0o700 })
  privateFolder(root)
  const dir = join(root, `${manifest.version}-${manifest.hash}`)
  privateFolder(dir)
  for (const file of manifest.files) {
    const target = join(dir, file.name)
    if (digestOf(target) === file.sha256) continue
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    writeAtomically(target, asset(file.name))
    if (digestOf(target) !== file.sha256) throw new Error(`${target} does not match the copy inside the executable`)
  }
  return dir
}
