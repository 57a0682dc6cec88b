import { AjvCompiler } from '@fastify/ajv-compiler'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'

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

const validators = AjvCompiler()
const newSerializer = SerializerSelector()
const serializers = new WeakMap<object, Map<string, Serializer>>()

const buildSerializer: SerializerFactory = (externalSchemas, options) => {
  const compile = newSerializer(externalSchemas, options)
  const key = JSON.stringify([externalSchemas, options])
  return (route) => {
    const schema = route.schema as object
    let built = serializers.get(schema)
    if (!built) serializers.set(schema, (built = new Map()))
    let serialize = built.get(key)
    if (!serialize) built.set(key, (serialize = compile(route) as Serializer))
    return serialize
  }
}

/** The `schemaController` option of every app: compilers shared across the apps of this process. */
export const sharedSchemaCompilers: FastifyServerOptions['schemaController'] = {
  compilersFactory: { buildValidator: validators, buildSerializer },
}
