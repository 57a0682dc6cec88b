import { Type } from 'typebox'

// Schemas shared by several routes.

export const SiteParams = Type.Object({ site: Type.String() })

/** Every JSON error body: a stable machine-readable code and a sentence for people. */
export const ErrorBody = Type.Object({
  error: Type.String(),
  message: Type.String(),
})
