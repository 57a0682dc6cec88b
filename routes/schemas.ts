import { Type } from 'typebox'

// Schemas shared by several routes.

export const SiteParams = Type.Object({ site: Type.String() })

/** Every JSON error body: a stable machine-readable code and a sentence for people. */
export const ErrorBody = Type.Object({
  error: Type.String(),
  message: Type.String(),
})

/** A 400 invalid_request body: `fields` names each field at fault and why (plugins/http/validation.ts). */
export const InvalidRequestBody = Type.Object({
  error: Type.String(),
  message: Type.String(),
  fields: Type.Optional(Type.Array(Type.Object({ field: Type.String(), problem: Type.String() }))),
})
