import { randomBytes } from 'node:crypto'
import { hash, verify } from '@node-rs/argon2'

// argon2id with the library's defaults (m=19456 KiB, t=2, p=1: OWASP's recommendation). The work
// runs on libuv's thread pool, never on the event loop. `Algorithm` is a const enum that breaks
// isolatedModules, and argon2id is already the default, so it is not named.
export function hashPassword(password: string): Promise<string> {
  return hash(password)
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password)
  } catch {
    return false
  }
}

/** A password for a new account: 20 base64url characters, about 120 bits. */
export function randomPassword(): string {
  return randomBytes(15).toString('base64url')
}
