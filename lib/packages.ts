import { createRequire } from 'node:module'

// Packages taken at their first use, not by every start (docs/decisions.md, "What every build paid
// for"): each by its CommonJS build, with require, since their callers are synchronous.
// The single executable, which has no node_modules beside it, takes them from
// tools/build/sea/packages.ts instead (tools/build/binary.ts swaps the modules);
// test/cli/production.test.ts fails a start that loads one.
const require = createRequire(import.meta.url)

let luxon: typeof import('luxon') | undefined
let ajvCompiler: typeof import('@fastify/ajv-compiler') | undefined
let serializerCompiler: typeof import('@fastify/fast-json-stringify-compiler') | undefined

/**
 * luxon's DateTime, for business time (lib/business-time.ts): its source alone is half a megabyte of
 * heap, kept as two bytes a character, and a process computes no business time before a write or a
 * report asks for it.
 */
export function dateTime(): typeof import('luxon').DateTime {
  return (luxon ??= require('luxon') as typeof import('luxon')).DateTime
}

/**
 * Fastify's compiler of validators (plugins/http/schema-compilers.ts): Ajv and its formats, 85
 * modules that made a started process about 14 MB larger, for the first request that has a schema
 * to check.
 */
export function ajvCompilerFactory(): typeof import('@fastify/ajv-compiler').AjvCompiler {
  return (ajvCompiler ??= require('@fastify/ajv-compiler') as typeof import('@fastify/ajv-compiler')).AjvCompiler
}

/** Fastify's compiler of serializers (fast-json-stringify, which takes Ajv too), for the first answer that has a schema. */
export function serializerSelector(): typeof import('@fastify/fast-json-stringify-compiler').SerializerSelector {
  return (serializerCompiler ??= require('@fastify/fast-json-stringify-compiler') as typeof import('@fastify/fast-json-stringify-compiler')).SerializerSelector
}
