import { Readable } from 'node:stream'
import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { fileBytes, saveFile, type Attachment, type FileStore } from '../../db/stores/files.ts'
import { cleanFileName, contentDisposition, MESSAGE_LIMITS, type FileLimits } from '../../lib/files.ts'
import { noneMatchHolds } from '../../lib/entity-tags.ts'
import { InvalidRequest, strictValidatorCompiler } from '../../plugins/http/validation.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { httpError, notFound } from './discussions/http-errors.ts'
import { AttachmentResource } from './discussions/schemas.ts'
import { attachmentView, moment } from './discussions/views.ts'

// Attachments through the API (docs/decisions.md, "Attachments"): uploads made before the comment
// that carries them (POST /<site>/uploads), files sent with the comment itself (multipart, read
// here for the discussion routes), and the download of an attachment.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An API route that answers with something else than JSON: any Accept is taken (plugins/versioning.ts). */
    anyMediaType?: boolean
  }
}

export const UploadResource = Type.Object({
  ...AttachmentResource.properties,
  expires_at: Type.String({ format: 'date-time', description: 'Removed then unless a comment carries it.' }),
})

export const UploadListing = Type.Object({ uploads: Type.Array(UploadResource) })

// The file parts of a multipart body, for the OpenAPI document (routes/openapi.ts, withFiles): the
// route schemas check the fields only, the files being read as they stream.
const FileParts = Type.Array(Type.String({ format: 'binary' }), { description: 'One part per file, each with its filename: at most 10 a request, and 10 MB each by default.' })
export const UploadForm = Type.Object({ file: FileParts })
export const PostFiles = Type.Object({ file: Type.Optional(FileParts) })

const AttachmentParams = Type.Object({
  site: SiteParams.properties.site,
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The attachment id.', errorMessage: { type: 'must be an attachment id' } }),
})

/** The multipart reader's own limits: a part count and field sizes that no form of ours comes near. */
export function multipartLimits(limits: FileLimits) {
  // One byte past the file limit, so that saveFile (which counts) refuses it with its own message.
  return { fileSize: limits.fileBytes + 1, files: MESSAGE_LIMITS.files, fields: 20, fieldSize: 1024 * 1024, parts: 40, headerPairs: 100 }
}

/**
 * The reader's complaint about the form itself (no boundary, a part cut off: busboy throws a plain
 * Error) as the client's 400; anything else (a store's refusal, a database error, the multipart
 * plugin's own limits with their status) undefined.
 */
function brokenForm(error: unknown) {
  if (!(error instanceof Error) || error.constructor !== Error || 'statusCode' in error) return undefined
  return Object.assign(new Error(`The multipart/form-data body could not be read: ${error.message}.`), { statusCode: 400, code: 'invalid_multipart' })
}

/** Whose uploads a form's files become: the signed-in person, on the site of the request. */
export interface Owner {
  siteId: number
  userId: number
}

/**
 * Reads a multipart request: each file is kept as an upload of the signed-in person as it arrives
 * (streamed, db/stores/files.ts), each other part is a field; a field sent more than once keeps
 * every value. When anything fails, the uploads already made are removed before the error goes on.
 */
export async function readMultipart(fastify: FastifyInstance, request: FastifyRequest, limits: FileLimits, owner: Owner): Promise<{ fields: Map<string, string[]>; uploads: Attachment[] }> {
  const fields = new Map<string, string[]>()
  const uploads: Attachment[] = []
  try {
    for await (const part of request.parts({ limits: multipartLimits(limits) })) {
      // A form's file input left empty is a part with no filename and no bytes: no file.
      if (part.type === 'file' && !part.filename) part.file.resume()
      else if (part.type === 'file') {
        uploads.push(await saveFile(fastify.files, { siteId: owner.siteId, uploaderId: owner.userId, name: cleanFileName(part.filename) }, part.file, limits))
      } else {
        fields.set(part.fieldname, [...(fields.get(part.fieldname) ?? []), String(part.value)])
      }
    }
  } catch (error) {
    // What the client is still sending is read and dropped (the request timeout bounds it), so the
    // connection ends or goes on: left paused, it would hold the server's close forever.
    request.raw.unpipe()
    request.raw.resume()
    await fastify.files.discard(owner.siteId, owner.userId, uploads.map((u) => u.id))
    throw brokenForm(error) ?? httpError(error)
  }
  return { fields, uploads }
}

// The fields of a discussion's bodies that are booleans: in a form, `true` or `false`.
const BOOLEAN_FIELDS = new Set(['internal', 'public'])

/**
 * The JSON body a multipart request to a discussion route stands for: its fields as the JSON
 * fields of the same names (`true`/`false` for the booleans, ids for `uploads`, a field sent twice
 * a list, which the schema then refuses), and its files, uploaded as they arrive, added to `uploads`.
 * The route's own schema then checks it as it checks JSON.
 */
export async function multipartBody(
  fastify: FastifyInstance,
  request: FastifyRequest,
  limits: FileLimits,
  owner: Owner,
): Promise<{ body: Record<string, unknown>; uploaded: number[]; digests: string[] }> {
  const { fields, uploads } = await readMultipart(fastify, request, limits, owner)
  const body: Record<string, unknown> = {}
  for (const [name, values] of fields) {
    if (name === 'uploads') body.uploads = values.map((v) => (/^\d{1,15}$/.test(v) ? Number(v) : v))
    else if (BOOLEAN_FIELDS.has(name) && values.length === 1 && (values[0] === 'true' || values[0] === 'false')) body[name] = values[0] === 'true'
    else body[name] = values.length === 1 ? values[0] : values
  }
  const uploaded = uploads.map((u) => u.id)
  if (uploaded.length > 0) body.uploads = [...((body.uploads as unknown[] | undefined) ?? []), ...uploaded]
  // What a repeat with the same Idempotency-Key must match (plugins/http/idempotency.ts): the files' bytes, not their new ids.
  return { body, uploaded, digests: uploads.map((u) => u.sha256) }
}

/** The Content-Type a file goes out with: text is said to be UTF-8, which its detection checked. */
const typeHeader = (type: string) => (type.startsWith('text/') ? `${type}; charset=utf-8` : type)

/**
 * Answers with an attachment's bytes, streamed piece by piece, as the API and the pages send a
 * file: its detected type, `attachment` unless an image named as what it is, nosniff, a sandbox
 * CSP, and its SHA-256 as a strong ETag (304 to an If-None-Match naming it); nothing but the
 * headers to HEAD.
 */
export function sendAttachment(files: FileStore, found: Attachment, request: FastifyRequest, reply: FastifyReply) {
  const tag = `"${found.sha256}"`
  // A file is its discussion's, read by whom its discussion is: never kept by a shared cache, nor by
  // the browser past the session that read it (the pages that link it say no-store too).
  reply.header('etag', tag).header('cache-control', 'private, no-store')
  if (noneMatchHolds(request.headers['if-none-match'], tag)) return reply.code(304).send()
  reply
    .header('content-type', typeHeader(found.contentType))
    .header('content-length', found.size)
    .header('content-disposition', contentDisposition(found.name, found.contentType))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "sandbox; default-src 'none'")
  // HEAD: an empty stream, which Fastify's HEAD route drains without touching Content-Length.
  return reply.send(request.method === 'HEAD' ? Readable.from([]) : Readable.from(fileBytes(files, found.fileId)))
}

/** POST /<site>/uploads and GET (and HEAD) /<site>/attachments/<id>. */
const fileRoutes: FastifyPluginAsyncTypebox<{ limits: FileLimits }> = async (fastify, { limits }) => {
  const { files, urls } = fastify
  // Validation that never coerces and names every bad field, as for the discussions (plugins/http/validation.ts).
  fastify.setValidatorCompiler(strictValidatorCompiler)
  await fastify.register(multipart)

  fastify.post(
    '/:site/uploads',
    {
      schema: {
        tags: ['attachments'],
        operationId: 'createUploads',
        summary: 'Upload files for a comment to carry (multipart/form-data, one or more file parts)',
        description:
          'Each file is kept a day unless a comment names it in `uploads`. A file over the limit (10 MB by default), more than 10 files, or a site out of space is refused with 413 and nothing is kept.',
        params: SiteParams,
        consumes: ['multipart/form-data'],
        response: { 201: UploadListing, 400: InvalidRequestBody, 413: ErrorBody, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) {
        return reply.code(415).send({ error: 'unsupported_media_type', message: 'Send the files as multipart/form-data.' })
      }
      const { site, user } = request.auth!
      const { uploads } = await readMultipart(fastify, request, limits, { siteId: site.id, userId: user.id })
      if (uploads.length === 0) throw new InvalidRequest([{ field: 'file', problem: 'is missing: send at least one file part (with a filename)' }])
      const address = urls.site(site.permalink)
      return reply.code(201).send({ uploads: uploads.map((u) => ({ ...attachmentView(address, u), expires_at: moment(u.expiresAt!) })) })
    },
  )

  fastify.get(
    '/:site/attachments/:id',
    {
      config: { anyMediaType: true },
      schema: {
        tags: ['attachments'],
        operationId: 'getAttachment',
        summary: "Download an attachment: its bytes, with its detected type",
        description:
          'Raster images (PNG, JPEG, GIF, WebP) are `inline`; everything else is `attachment`. The ETag is the SHA-256 of the bytes. An upload no comment carries yet is its uploader\'s only.',
        params: AttachmentParams,
        produces: ['application/octet-stream'],
        response: { 200: Type.Unsafe({ type: 'string', format: 'binary' }), 400: InvalidRequestBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      const found = await files.find(site.id, request.params.id)
      if (!found || (found.commentId === null && found.uploaderId !== user.id)) throw notFound(`there is no attachment ${request.params.id} on this site`)
      return sendAttachment(files, found, request, reply as FastifyReply)
    },
  )
}

export default fileRoutes
