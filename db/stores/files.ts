import { createHash, randomBytes } from 'node:crypto'
import { and, asc, eq, gt, inArray, isNull, like, lt, notLike, sql } from '../drizzle.ts'
import { onFirstUse, type StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { detectContentType, MESSAGE_LIMITS, MiB, SNIFF_BYTES, type FileLimits } from '../../lib/files.ts'
import { StoreError } from './errors.ts'
import { lockSite } from './sites.ts'

// The files of attachments, one store for both engines (docs/decisions.md, "Attachments"). A file
// is kept once per site by its SHA-256, in pieces of FILE_PIECE_BYTES: written piece by piece as
// it arrives (never whole in memory, and never inside one long transaction: a slow upload would
// hold SQLite's connection for its length), under a `pending:` name that no lookup by content
// finds; then, in one short transaction under the site's lock, either named by its content or,
// when the site has that content already, dropped for the file it has. An attachment is a file as
// someone sent it: its cleaned name and uploader, on a comment or, as an upload, on none yet and
// expiring. The sweep removes expired uploads, files no attachment names, and what an interrupted
// upload left behind.

/** The largest piece of a file a row holds. */
export const FILE_PIECE_BYTES = 256 * 1024

/** How long an upload that no comment has taken is kept. */
export const UPLOAD_KEEP_MS = 24 * 60 * 60 * 1000

/** How long a file may stay half-written before the sweep takes it for an interrupted upload. */
export const PENDING_KEEP_MS = 6 * 60 * 60 * 1000

const PENDING = 'pending:%'
const INT_MAX = 2 ** 31 - 1

/** An attachment with what its file is. */
export interface Attachment {
  id: number
  siteId: number
  commentId: number | null
  name: string
  uploaderId: number
  createdAt: Date
  expiresAt: Date | null
  /** The message a mail came as (plugins/mail/pipeline.ts): for the staff and its uploader only. */
  originalMessage: boolean
  fileId: number
  size: number
  contentType: string
  sha256: string
}

/** An attachment found for a download, with whether its comment is an internal note. */
export interface FoundAttachment extends Attachment {
  internal: boolean
  /** The number of the discussion whose comment carries it; null while it is an upload no comment carries. */
  discussionNumber: number | null
}

export interface NewFile {
  siteId: number
  uploaderId: number
  /** Already cleaned (lib/files.ts, cleanFileName). */
  name: string
  /** The message a mail came as, kept beside its comment: for the staff and its uploader only. */
  originalMessage?: boolean
}

function tooLarge(limit: number): StoreError {
  return new StoreError(`a file may hold at most ${limit / MiB} MB`, 'too_large', 'file')
}

function quotaFull(limit: number): StoreError {
  return new StoreError(`this site's files would pass its space of ${limit / MiB} MB: remove old discussions' files or ask the operator for more`, 'too_large', 'file')
}

function columns(port: StorePort) {
  const { attachments, files } = port.tables
  return {
    id: attachments.id,
    siteId: attachments.siteId,
    commentId: attachments.commentId,
    name: attachments.name,
    uploaderId: attachments.uploaderId,
    createdAt: attachments.createdAt,
    expiresAt: attachments.expiresAt,
    originalMessage: attachments.originalMessage,
    fileId: attachments.fileId,
    size: files.size,
    contentType: files.contentType,
    sha256: files.sha256,
  }
}

/**
 * Puts the uploads `ids` of `uploaderId` on the comment `commentId`, in the transaction of `port`
 * (the comment's own): they must be the uploader's, on this site, on no comment yet and not
 * expired, and within MESSAGE_LIMITS together. Anything else is a StoreError on `uploads`.
 */
export async function claimUploads(port: StorePort, clock: Clock, input: { siteId: number; uploaderId: number; commentId: number; ids: number[] }): Promise<void> {
  const ids = [...new Set(input.ids)]
  if (ids.length === 0) return
  if (ids.length > MESSAGE_LIMITS.files) throw new StoreError(`a message carries at most ${MESSAGE_LIMITS.files} files`, 'invalid', 'uploads')
  const { attachments, files } = port.tables
  const now = new Date(clock())
  // An id past a 32-bit integer is no attachment, and PostgreSQL would refuse to compare it.
  const possible = ids.filter((id) => id <= INT_MAX)
  const found = possible.length === 0 ? [] : await port.locked(
    port.db
      .select({ id: attachments.id, size: files.size })
      .from(attachments)
      .innerJoin(files, eq(files.id, attachments.fileId))
      .where(
        and(
          inArray(attachments.id, possible),
          eq(attachments.siteId, input.siteId),
          eq(attachments.uploaderId, input.uploaderId),
          isNull(attachments.commentId),
          gt(attachments.expiresAt, now),
        ),
      ),
    attachments,
  )
  if (found.length !== ids.length) {
    const missing = ids.filter((id) => !found.some((f) => f.id === id))
    throw new StoreError(`names ${missing.join(', ')}, which ${missing.length === 1 ? 'is not an upload' : 'are not uploads'} of yours on this site waiting for a message (an upload is kept a day, and used once)`, 'invalid', 'uploads')
  }
  const bytes = found.reduce((sum, f) => sum + f.size, 0)
  if (bytes > MESSAGE_LIMITS.bytes) throw new StoreError(`a message carries at most ${MESSAGE_LIMITS.bytes / MiB} MB of files`, 'too_large', 'uploads')
  await port.db.update(attachments).set({ commentId: input.commentId, expiresAt: null }).where(inArray(attachments.id, ids))
}

/**
 * The bytes the site's files take, read in the transaction of `port`: each content once, half-written
 * ones not yet. One row, which triggers on files keep (db/schema/sqlite.ts, siteFileUsage).
 */
async function usageIn(port: StorePort, siteId: number): Promise<number> {
  const { siteFileUsage } = port.tables
  const read = port.prepared('files_usage', (db) => db.select({ bytes: siteFileUsage.bytes }).from(siteFileUsage).where(eq(siteFileUsage.siteId, sql.placeholder('siteId'))).prepare('files_usage'))
  const [row] = await read.execute({ siteId })
  return row?.bytes ?? 0
}

/** The attachments a comment carries, oldest first, read on `port` (in a transaction, those it just claimed). */
export function attachmentsOf(port: StorePort, commentId: number): Promise<Attachment[]> {
  const { attachments, files } = port.tables
  const read = port.prepared('files_of_comment_on_port', (db) =>
    db.select(columns(port)).from(attachments).innerJoin(files, eq(files.id, attachments.fileId)).where(eq(attachments.commentId, sql.placeholder('commentId'))).orderBy(asc(attachments.id)).prepare('files_of_comment_on_port'),
  )
  return read.execute({ commentId })
}

export function createFileStore(port: StorePort, clock: Clock) {
  const { db, tables: { attachments, comments, discussions, filePieces, files } } = port
  const p = sql.placeholder
  const view = columns(port)

  const insertPiece = onFirstUse(() => db.insert(filePieces).values({ fileId: p('fileId'), seq: p('seq'), bytes: p('bytes') }).prepare('files_piece_insert'))
  const readPiece = onFirstUse(() => db
    .select({ bytes: filePieces.bytes })
    .from(filePieces)
    .where(and(eq(filePieces.fileId, p('fileId')), eq(filePieces.seq, p('seq'))))
    .prepare('files_piece'))
  const ofDiscussion = onFirstUse(() => db
    .select(view)
    .from(attachments)
    .innerJoin(files, eq(files.id, attachments.fileId))
    .innerJoin(comments, eq(comments.id, attachments.commentId))
    .where(eq(comments.discussionId, p('discussionId')))
    .orderBy(asc(attachments.id))
    .prepare('files_of_discussion'))
  const ofComment = onFirstUse(() => db
    .select(view)
    .from(attachments)
    .innerJoin(files, eq(files.id, attachments.fileId))
    .where(eq(attachments.commentId, p('commentId')))
    .orderBy(asc(attachments.id))
    .prepare('files_of_comment'))
  const found = onFirstUse(() => db
    .select({ ...view, internal: sql<boolean | number | null>`${comments.internal}`, discussionNumber: discussions.number })
    .from(attachments)
    .innerJoin(files, eq(files.id, attachments.fileId))
    .leftJoin(comments, eq(comments.id, attachments.commentId))
    .leftJoin(discussions, eq(discussions.id, comments.discussionId))
    .where(and(eq(attachments.id, port.wide(p('id'))), eq(attachments.siteId, p('siteId'))))
    .prepare('files_find'))

  const usage = (siteId: number) => usageIn(port, siteId)

  /** The attachment `id` of `siteId` as just written or read, by id. */
  async function attachment(tx: StorePort, siteId: number, id: number): Promise<FoundAttachment | undefined> {
    const [row] = await tx.db
      .select({ ...columns(tx), internal: sql<boolean | number | null>`${tx.tables.comments.internal}`, discussionNumber: tx.tables.discussions.number })
      .from(tx.tables.attachments)
      .innerJoin(tx.tables.files, eq(tx.tables.files.id, tx.tables.attachments.fileId))
      .leftJoin(tx.tables.comments, eq(tx.tables.comments.id, tx.tables.attachments.commentId))
      .leftJoin(tx.tables.discussions, eq(tx.tables.discussions.id, tx.tables.comments.discussionId))
      .where(and(eq(tx.tables.attachments.id, id), eq(tx.tables.attachments.siteId, siteId)))
    return row && { ...row, internal: Boolean(row.internal) }
  }

  return {
    usage,

    /** A new file of `siteId` with no content yet, under a name no lookup by content finds. */
    async begin(siteId: number): Promise<number> {
      const [{ id }] = await db
        .insert(files)
        .values({ siteId, sha256: `pending:${randomBytes(12).toString('hex')}`, size: 0, contentType: 'application/octet-stream', createdAt: new Date(clock()) })
        .returning({ id: files.id })
      return id
    },

    /** Piece `seq` (from 0) of a file being written. */
    async writePiece(fileId: number, seq: number, bytes: Buffer): Promise<void> {
      await insertPiece.execute({ fileId, seq, bytes })
    },

    /**
     * The file `fileId`, fully written, named by its content: or dropped for the site's file of
     * the same content. Then an upload of it, kept UPLOAD_KEEP_MS. Under the site's lock, so two
     * uploads of one content cannot both name a file by it, and the quota is read once at a time.
     */
    finish(fileId: number, input: NewFile & { sha256: string; size: number; contentType: string; siteBytes: number }): Promise<Attachment> {
      return port.atomic(async (tx) => {
        const { attachments: a, files: f } = tx.tables
        await lockSite(tx, input.siteId)
        const [same] = await tx.locked(tx.db.select({ id: f.id }).from(f).where(and(eq(f.siteId, input.siteId), eq(f.sha256, input.sha256))))
        let kept = fileId
        if (same) {
          await tx.db.delete(f).where(eq(f.id, fileId))
          kept = same.id
        } else {
          if ((await usageIn(tx, input.siteId)) + input.size > input.siteBytes) throw quotaFull(input.siteBytes)
          await tx.db.update(f).set({ sha256: input.sha256, size: input.size, contentType: input.contentType }).where(eq(f.id, fileId))
        }
        const now = clock()
        const [{ id }] = await tx.db
          .insert(a)
          .values({ siteId: input.siteId, fileId: kept, name: input.name, uploaderId: input.uploaderId, originalMessage: input.originalMessage ?? false, createdAt: new Date(now), expiresAt: new Date(now + UPLOAD_KEEP_MS) })
          .returning({ id: a.id })
        return (await attachment(tx, input.siteId, id))!
      })
    },

    /** Removes a file that was being written (an upload refused or broken off); a named file is left alone. */
    async abandon(fileId: number): Promise<void> {
      await db.delete(files).where(and(eq(files.id, fileId), like(files.sha256, PENDING)))
    },

    /**
     * Removes uploads of `uploaderId` that no comment carries (those of a request that failed), and
     * their files when nothing else names them.
     */
    async discard(siteId: number, uploaderId: number, ids: number[]): Promise<void> {
      if (ids.length === 0) return
      await port.atomic(async (tx) => {
        const { attachments: a, files: f } = tx.tables
        const gone = await tx.db
          .delete(a)
          .where(and(inArray(a.id, ids), eq(a.siteId, siteId), eq(a.uploaderId, uploaderId), isNull(a.commentId)))
          .returning({ fileId: a.fileId })
        const fileIds = gone.map((g) => g.fileId)
        if (fileIds.length > 0) await tx.db.delete(f).where(and(inArray(f.id, fileIds), sql`not exists (select 1 from ${a} where ${a.fileId} = ${f.id})`))
      })
    },

    /** Piece `seq` of a file, or undefined past its last. */
    async piece(fileId: number, seq: number): Promise<Buffer | undefined> {
      const [row] = await readPiece.execute({ fileId, seq })
      return row && Buffer.from(row.bytes)
    },

    /** The attachment `id` of the site, with whether it is on an internal note; undefined when the site has none such. */
    async find(siteId: number, id: number): Promise<FoundAttachment | undefined> {
      const [row] = await found.execute({ siteId, id })
      return row && { ...row, internal: Boolean(row.internal) }
    },

    /** The attachments of a discussion's comments, oldest first. */
    ofDiscussion(discussionId: number): Promise<Attachment[]> {
      return ofDiscussion.execute({ discussionId })
    },

    /** The attachments a comment carries, oldest first. */
    ofComment(commentId: number): Promise<Attachment[]> {
      return ofComment.execute({ commentId })
    },

    /**
     * Removes the uploads expired by now, the files that no attachment names, and those left
     * half-written for PENDING_KEEP_MS (an upload whose process stopped). Returns what it removed.
     */
    sweep(): Promise<{ uploads: number; files: number }> {
      const now = clock()
      return port.atomic(async (tx) => {
        const { attachments: a, files: f } = tx.tables
        const uploads = await tx.db.delete(a).where(and(isNull(a.commentId), lt(a.expiresAt, new Date(now)))).returning({ id: a.id })
        const unused = await tx.db
          .delete(f)
          .where(
            sql`(${notLike(f.sha256, PENDING)} and not exists (select 1 from ${a} where ${a.fileId} = ${f.id}))
              or (${like(f.sha256, PENDING)} and ${lt(f.createdAt, new Date(now - PENDING_KEEP_MS))})`,
          )
          .returning({ id: f.id })
        return { uploads: uploads.length, files: unused.length }
      })
    },
  }
}

export type FileStore = ReturnType<typeof createFileStore>

/**
 * Keeps the bytes of `stream` as a file of the site and makes an upload of it: piece by piece,
 * hashing as they pass, refused (and nothing kept) once it passes the file limit, before the rest
 * is read; the site's space is checked once the content is known (a file the site has takes none). The type is detected from the first bytes. Runs over the
 * guarded store (each call a share of the connection), so a slow sender holds nothing between pieces.
 */
export async function saveFile(store: FileStore, file: NewFile, stream: AsyncIterable<Buffer> | Iterable<Buffer>, limits: FileLimits): Promise<Attachment> {
  const fileId = await store.begin(file.siteId)
  try {
    const hash = createHash('sha256')
    let size = 0
    let seq = 0
    let held: Buffer[] = []
    let heldBytes = 0
    let head = Buffer.alloc(0)
    for await (const chunk of stream) {
      size += chunk.length
      if (size > limits.fileBytes) throw tooLarge(limits.fileBytes)
      hash.update(chunk)
      if (head.length < SNIFF_BYTES) head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)])
      held.push(chunk)
      heldBytes += chunk.length
      while (heldBytes >= FILE_PIECE_BYTES) {
        const all = held.length === 1 ? held[0] : Buffer.concat(held)
        await store.writePiece(fileId, seq++, Buffer.from(all.subarray(0, FILE_PIECE_BYTES)))
        const rest = all.subarray(FILE_PIECE_BYTES)
        held = rest.length > 0 ? [rest] : []
        heldBytes = rest.length
      }
    }
    if (heldBytes > 0) await store.writePiece(fileId, seq, Buffer.concat(held))
    const contentType = await detectContentType(head)
    return await store.finish(fileId, { ...file, sha256: hash.digest('hex'), size, contentType, siteBytes: limits.siteBytes })
  } catch (error) {
    await store.abandon(fileId)
    throw error
  }
}

/** The bytes of a file, piece by piece, each read as it is wanted (a slow reader holds nothing between them). */
export async function* fileBytes(store: FileStore, fileId: number): AsyncGenerator<Buffer> {
  for (let seq = 0; ; seq++) {
    const piece = await store.piece(fileId, seq)
    if (!piece) return
    yield piece
  }
}
