import { AjvCompiler } from '@fastify/ajv-compiler'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import { DateTime } from 'luxon'

// Stands in for lib/packages.ts inside the single executable (tools/build/binary.ts swaps the
// modules): esbuild bundles everything into one script there, and a require() of a package could not
// be resolved in a file with no node_modules beside it. The same names as lib/packages.ts
// (test/house/sea-modules.test.ts compares them).

export const dateTime = (): typeof DateTime => DateTime
export const ajvCompilerFactory = (): typeof AjvCompiler => AjvCompiler
export const serializerSelector = (): typeof SerializerSelector => SerializerSelector
