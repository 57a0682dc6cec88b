import { randomBytes } from 'node:crypto'
import { and, count, desc, eq, isNotNull, isNull, lt, or, sql, type Placeholder } from '../drizzle.ts'
import type { FactorKind } from '../values.ts'
import { onFirstUse, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { StoreError } from './errors.ts'

// Second factors (docs/decisions.md, "Second factors"), one store for both engines: authenticator
// apps (TOTP, RFC 6238, with otplib), passkeys (WebAuthn; the ceremonies are in
// routes/web/passkeys.ts) and single-use recovery codes. A TOTP secret and a passkey's public key
// are sealed under the server key; a recovery code is kept only as a keyed digest. A code is
// accepted once: the time step it was accepted for is written by one conditional statement, so of
// two requests sending the same code, in any processes, one succeeds. A passkey's challenge is
// answered once the same way (usedChallenges).

export type SecondFactor = Tables['secondFactors']['$inferSelect']

// otplib is loaded on first use: most requests never touch a second factor (docs/decisions.md,
// "Loaded on first use").
const otp = () => import('otplib')

/** Codes of the step before and after the current one are accepted too: a clock 30 s off still works. */
export const TOTP_TOLERANCE_SECONDS = 30
export const RECOVERY_CODES = 10
/**
 * Wrong authenticator codes and recovery codes in a row after which both stop for the account,
 * until a passkey proves it is them or an operator unlocks them (`service-desk user
 * unlock-second-factor`): NIST SP 800-63B 5.2.2 allows at most 100. With six digits and three time
 * steps accepted, 100 guesses find a code with a chance of 3 in 10,000.
 */
export const MAX_SECOND_STEP_FAILURES = 100
const MAX_FACTOR_NAME = 60
/** How a recovery code is written: 10 characters in two groups, without look-alike letters. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'

/** A new recovery code, such as `k7m2q-x9pwa`. */
function recoveryCode(): string {
  const bytes = randomBytes(10)
  const text = [...bytes].map((byte) => RECOVERY_ALPHABET[byte % RECOVERY_ALPHABET.length]).join('')
  return `${text.slice(0, 5)}-${text.slice(5)}`
}

/** The name trimmed, or a StoreError unless it is one a person can tell their factors apart by. */
export function checkName(name: string, example: string): string {
  const trimmed = name.trim()
  if (trimmed === '' || trimmed.length > MAX_FACTOR_NAME || holdsNul(trimmed)) {
    throw new StoreError(`give the ${example} a name of 1 to ${MAX_FACTOR_NAME} characters`, 'invalid', 'name')
  }
  return trimmed
}

/** A passkey as the browser describes it (WebAuthn's PublicKeyCredentialDescriptor, JSON form). */
export interface PasskeyDescriptor {
  id: string
  transports?: string[]
}

/** A registered passkey: what checks its signatures. */
export interface Passkey {
  factor: SecondFactor
  publicKey: Uint8Array<ArrayBuffer>
}

/** How people type a recovery code: any case, with or without the dash and spaces. */
const normalCode = (code: string) => code.trim().toLowerCase().replace(/[\s-]/g, '')

export function createSecondFactorStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { recoveryCodes, secondFactors, usedChallenges, users } } = port
  const epoch = () => Math.floor(clock() / 1000)

  /** The time step a code of this secret belongs to, when it is one not accepted before; else undefined. */
  async function stepOf(factor: SecondFactor, code: string): Promise<number | undefined> {
    const secret = box.open(factor.secret)
    if (secret === null || !/^\d{6}$/.test(code)) return undefined
    const result = await (await otp()).verify({
      secret,
      token: code,
      epoch: epoch(),
      epochTolerance: TOTP_TOLERANCE_SECONDS,
      ...(factor.lastTimeStep === null ? {} : { afterTimeStep: factor.lastTimeStep }),
    })
    return result.valid ? (result as { timeStep: number }).timeStep : undefined
  }

  /** Marks the step used, unless another request did first: whether this one won. */
  async function claimStep(factor: SecondFactor, step: number): Promise<boolean> {
    const claimed = await db
      .update(secondFactors)
      .set({ lastTimeStep: step, lastUsedAt: new Date(clock()) })
      .where(and(eq(secondFactors.id, factor.id), or(isNull(secondFactors.lastTimeStep), lt(secondFactors.lastTimeStep, step))))
      .returning({ id: secondFactors.id })
    return claimed.length > 0
  }

  const confirmed = (userId: number | Placeholder) => and(eq(secondFactors.userId, userId), isNotNull(secondFactors.confirmedAt))

  // Asked on the API's path (Basic) and before every page of a site that requires a factor: prepared once.
  const factorCount = onFirstUse(() => db.select({ n: count() }).from(secondFactors).where(confirmed(sql.placeholder('userId'))).prepare('second_factors_count'))

  async function has(userId: number): Promise<boolean> {
    const [{ n }] = await factorCount.execute({ userId })
    return n > 0
  }

  return {
    /** Wrong codes in a row of the account (MAX_SECOND_STEP_FAILURES stops them). */
    async failedCodes(userId: number): Promise<number> {
      const [row] = await db.select({ n: users.secondStepFailures }).from(users).where(eq(users.id, userId))
      return row?.n ?? 0
    },

    /**
     * Counts one wrong code of the account, in one statement, so that requests in several processes
     * each count; the count now.
     */
    async failCode(userId: number): Promise<number> {
      const [row] = await db
        .update(users)
        .set({ secondStepFailures: sql`${users.secondStepFailures} + 1` })
        .where(eq(users.id, userId))
        .returning({ n: users.secondStepFailures })
      return row?.n ?? 0
    },

    /** The account proved it is them (a right code, a passkey, an operator): its count starts again; whether there was one. */
    async clearFailedCodes(userId: number): Promise<boolean> {
      const cleared = await db.update(users).set({ secondStepFailures: 0 }).where(and(eq(users.id, userId), sql`${users.secondStepFailures} > 0`)).returning({ id: users.id })
      return cleared.length > 0
    },

    /** The account's confirmed factors, newest first. */
    async list(userId: number): Promise<SecondFactor[]> {
      return db.select().from(secondFactors).where(confirmed(userId)).orderBy(desc(secondFactors.createdAt), desc(secondFactors.id))
    },

    /** Whether the account has a confirmed second factor. */
    has,

    /** The kinds of the account's confirmed factors. */
    async kinds(userId: number): Promise<Set<FactorKind>> {
      const rows = await db.selectDistinct({ kind: secondFactors.kind }).from(secondFactors).where(confirmed(userId))
      return new Set(rows.map((row) => row.kind))
    },

    /**
     * Starts an authenticator app's enrollment: a new secret, and the otpauth URI the app reads
     * (as a QR code or as text). Nothing proves anything until `confirmTotp` sees a code of it; an
     * earlier enrollment never confirmed is dropped.
     */
    async startTotp(userId: number, name: string, label: string, issuer: string): Promise<{ id: number; secret: string; uri: string }> {
      const trimmed = checkName(name, 'app')
      const { generateSecret, generateURI } = await otp()
      const secret = generateSecret()
      await db.delete(secondFactors).where(and(eq(secondFactors.userId, userId), isNull(secondFactors.confirmedAt)))
      const [factor] = await db
        .insert(secondFactors)
        .values({ userId, kind: 'totp', name: trimmed, secret: box.seal(secret), createdAt: new Date(clock()) })
        .returning({ id: secondFactors.id })
      return { id: factor.id, secret, uri: generateURI({ issuer, label, secret }) }
    },

    /** The secret and URI of an enrollment not yet confirmed, to show its page again; undefined if none. */
    async pendingTotp(userId: number, id: number, label: string, issuer: string): Promise<{ id: number; secret: string; uri: string; name: string } | undefined> {
      const [factor] = await db
        .select()
        .from(secondFactors)
        .where(and(eq(secondFactors.id, id), eq(secondFactors.userId, userId), isNull(secondFactors.confirmedAt)))
      const secret = factor && box.open(factor.secret)
      return secret ? { id: factor.id, secret, uri: (await otp()).generateURI({ issuer, label, secret }), name: factor.name } : undefined
    },

    /** Confirms an enrollment with a code of its app; whether the code was right. */
    async confirmTotp(userId: number, id: number, code: string): Promise<boolean> {
      const [factor] = await db
        .select()
        .from(secondFactors)
        .where(and(eq(secondFactors.id, id), eq(secondFactors.userId, userId), isNull(secondFactors.confirmedAt)))
      const step = factor && (await stepOf(factor, code.trim()))
      if (!factor || step === undefined || !(await claimStep(factor, step))) return false
      await db.update(secondFactors).set({ confirmedAt: new Date(clock()) }).where(eq(secondFactors.id, id))
      return true
    },

    /** Whether the code is a current one of one of the account's apps, never accepted before (then it is used up). */
    async checkTotp(userId: number, code: string): Promise<boolean> {
      const factors = await db.select().from(secondFactors).where(and(confirmed(userId), eq(secondFactors.kind, 'totp')))
      for (const factor of factors) {
        const step = await stepOf(factor, code.trim())
        if (step !== undefined) return claimStep(factor, step)
      }
      return false
    },

    /**
     * Adds a passkey the browser registered, confirmed at once: its registration answered a
     * challenge of ours. A credential registered already (on any account) is refused.
     */
    async addPasskey(userId: number, name: string, credential: { id: string; publicKey: Uint8Array; counter: number; transports?: string[] }): Promise<SecondFactor> {
      const trimmed = checkName(name, 'passkey')
      const at = new Date(clock())
      const [added] = await db
        .insert(secondFactors)
        .values({
          userId,
          kind: 'passkey',
          name: trimmed,
          secret: box.seal(Buffer.from(credential.publicKey).toString('base64url')),
          credentialId: credential.id,
          signCount: credential.counter,
          transports: (credential.transports ?? []).join(','),
          confirmedAt: at,
          createdAt: at,
        })
        .onConflictDoNothing()
        .returning()
      if (!added) throw new StoreError('this passkey is registered already', 'conflict', 'passkey')
      return added
    },

    /** The account's passkeys as the browser names them: to leave out at a registration, or to offer at a sign-in. */
    async passkeysOf(userId: number): Promise<PasskeyDescriptor[]> {
      const rows = await db
        .select({ id: secondFactors.credentialId, transports: secondFactors.transports })
        .from(secondFactors)
        .where(and(confirmed(userId), eq(secondFactors.kind, 'passkey')))
      return rows.map((row) => ({ id: row.id!, ...(row.transports ? { transports: row.transports.split(',') } : {}) }))
    },

    /** The passkey of a credential id, whoever's it is; undefined when there is none (or its key cannot be opened). */
    async passkey(credentialId: string): Promise<Passkey | undefined> {
      const [factor] = await db.select().from(secondFactors).where(and(eq(secondFactors.credentialId, credentialId), isNotNull(secondFactors.confirmedAt)))
      const key = factor && box.open(factor.secret)
      return key ? { factor, publicKey: Uint8Array.from(Buffer.from(key, 'base64url')) } : undefined
    },

    /** Notes that a passkey signed in or confirmed: the counter its authenticator reported, and when. */
    async usedPasskey(id: number, counter: number): Promise<void> {
      await db.update(secondFactors).set({ signCount: counter, lastUsedAt: new Date(clock()) }).where(eq(secondFactors.id, id))
    },

    /**
     * Marks a passkey challenge answered, unless it was before (one statement, whatever the race):
     * whether this is its first answer. Challenges past their expiry are forgotten here.
     */
    async claimChallenge(challenge: string, expiresAt: Date): Promise<boolean> {
      await db.delete(usedChallenges).where(lt(usedChallenges.expiresAt, new Date(clock())))
      const claimed = await db.insert(usedChallenges).values({ challenge, expiresAt }).onConflictDoNothing().returning({ challenge: usedChallenges.challenge })
      return claimed.length > 0
    },

    /** Removes one of the account's factors; whether there was one. */
    async remove(userId: number, id: number): Promise<SecondFactor | undefined> {
      const [removed] = await db.delete(secondFactors).where(and(eq(secondFactors.id, id), eq(secondFactors.userId, userId))).returning()
      if (removed && !(await has(userId))) await db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
      return removed
    },

    /** Ten new recovery codes, shown once; the old ones stop working. */
    async newRecoveryCodes(userId: number): Promise<string[]> {
      const codes = Array.from({ length: RECOVERY_CODES }, recoveryCode)
      await port.atomic(async (tx) => {
        await tx.db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
        await tx.db.insert(recoveryCodes).values(codes.map((code) => ({ userId, digest: box.digest(normalCode(code)) })))
      })
      return codes
    },

    /** How many of the account's recovery codes are left. */
    async recoveryCodesLeft(userId: number): Promise<number> {
      const [{ n }] = await db.select({ n: count() }).from(recoveryCodes).where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)))
      return n
    },

    /** Uses up a recovery code: whether it was one of the account's, not used before (one statement: used once, whatever the race). */
    async useRecoveryCode(userId: number, code: string): Promise<boolean> {
      const used = await db
        .update(recoveryCodes)
        .set({ usedAt: new Date(clock()) })
        .where(and(eq(recoveryCodes.userId, userId), eq(recoveryCodes.digest, box.digest(normalCode(code))), isNull(recoveryCodes.usedAt)))
        .returning({ userId: recoveryCodes.userId })
      return used.length > 0
    },
  }
}

export type SecondFactorStore = ReturnType<typeof createSecondFactorStore>
