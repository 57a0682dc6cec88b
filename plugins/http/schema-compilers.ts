import type { AjvCompiler } from '@fastify/ajv-compiler'
import type { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'
import { ajvCompilerFactory, serializerSelector } from '../../lib/packages.ts'
import { serializerSchema } from '../../lib/serializer-schema.ts'

// Fastify's own schema compilers (Ajv for what comes in, fast-json-stringify for what goes out),
// shared by every app this process builds, so that each route schema is compiled once per process
// rather than once per app. The service builds one app, and this changes nothing for it; the suite
// builds one for most of its tests, and compiling the same schemas again was about 60 ms of each
// app's 160 ms of CPU (a profile of 60 apps in one process).
//
// Validators: @fastify/ajv-compiler keeps one Ajv per set of shared schemas and options, and Ajv
// keeps what it compiled by the schema object; Fastify makes a new pool per app, this is one pool.
// Serializers: fast-json-stringify keeps nothing, so its functions are kept here by the schema
// object, and within it by the shared schemas and options they were built with. A compiled
// validator or serializer is a pure function of those, so two apps may share it.

type SerializerFactory = ReturnType<typeof SerializerSelector>
type Serializer = (value: unknown) => string

//
// Each is compiled at its first use, not at the start (docs/decisions.md, "Writes as light as
// reads"): the service has some 380 routes and most processes use few of them, and compiling them
// all was about 0.6 s of CPU of every start (of the service, of each process the tests start, of
// each test process's first app). test/app.test.ts compiles every route's
// schemas, so a schema that cannot be compiled still fails the suite, not a request.

// The compilers themselves (Ajv, fast-json-stringify) are loaded at the first schema compiled, not
// by every start (lib/packages.ts): a process that has answered nothing has compiled nothing.
//
// Ajv checks a schema against JSON Schema's own meta-schema before it compiles it, and compiles that
// meta-schema to do so at the first schema of the process: 15-20 ms of CPU, paid by the first
// request to a route Ajv validates (the site's root `GET /<site>`, OAuth's protected resource, the
// credentials and the policy: the API's other routes are TypeBox's), for a check of schemas that do
// not change once written. The suite makes it (test/app.test.ts: every route's schemas, compiled by
// Ajv with its defaults); the service's Ajv does not make it again. Measured: a started service's
// first `GET /demo` answered in 355 ms against 381 (medians of 9 starts each, taking turns).
let validatorFactory: ReturnType<typeof AjvCompiler> | undefined
let serializerFactory: ReturnType<typeof SerializerSelector> | undefined
const newValidator: ReturnType<typeof AjvCompiler> = (externalSchemas, options) =>
  (validatorFactory ??= ajvCompilerFactory()())(externalSchemas, { ...options, customOptions: { ...options?.customOptions, validateSchema: false } } as typeof options)
const newSerializer: ReturnType<typeof SerializerSelector> = (externalSchemas, options) => (serializerFactory ??= serializerSelector()())(externalSchemas, options)

/** What `cache` keeps for the schema object under `key`, made by `make` the first time. */
function keptFor<F>(cache: WeakMap<object, Map<string, F>>, schema: object, key: string, make: () => F): F {
  let built = cache.get(schema)
  if (!built) cache.set(schema, (built = new Map()))
  let kept = built.get(key)
  if (!kept) built.set(key, (kept = make()))
  return kept
}

const serializers = new WeakMap<object, Map<string, Serializer>>()

const buildSerializer: SerializerFactory = (externalSchemas, options) => {
  let compile: ReturnType<SerializerFactory> | undefined
  const key = JSON.stringify([externalSchemas, options])
  return (route) =>
    keptFor(serializers, route.schema as object, key, () => {
      let compiled: Serializer | undefined
      // Its nullable fields as type lists, which fast-json-stringify decides without Ajv (lib/serializer-schema.ts).
      return (value) => (compiled ??= (compile ??= newSerializer(externalSchemas, options))({ ...route, schema: serializerSchema(route.schema) }) as Serializer)(value)
    })
}

type ValidatorFactory = typeof newValidator
type Validate = ((data: unknown, context?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown }

/**
 * Ajv's validators, each compiled at its first call. Fastify passes an Ajv validator its parent
 * (so that a coerced root value is kept) when the function has `schemaEnv`, as Ajv's have; the
 * stand-in has it from the start, and gives the errors of each call where Fastify reads them.
 */
const validators = new WeakMap<object, Map<string, Validate>>()

const buildValidator: ValidatorFactory = (externalSchemas, options) => {
  let compile: ReturnType<ValidatorFactory> | undefined
  const key = JSON.stringify([externalSchemas, options])
  return (route) =>
    keptFor(validators, route.schema as object, `${key} ${route.httpPart}`, () => {
      let compiled: Validate | undefined
      const stand: Validate = (data, context) => {
        compiled ??= (compile ??= newValidator(externalSchemas, options))(route) as Validate
        const result = compiled(data, context)
        stand.errors = compiled.errors
        return result
      }
      stand.schemaEnv = true
      return stand
    }) as ReturnType<ReturnType<ValidatorFactory>>
}

/** The `schemaController` option of every app: compilers shared across the apps of this process. */
export const sharedSchemaCompilers: FastifyServerOptions['schemaController'] = {
  compilersFactory: { buildValidator, buildSerializer },
}
