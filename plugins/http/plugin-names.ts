import type { FastifyInstance } from 'fastify'

// Fastify names every plugin it registers (its encapsulation's log and errors, printPlugins). A
// plugin without a display name is looked for among the exports of every CommonJS module Node has
// loaded (`getPluginName`, fastify/lib/plugin-utils.js: a walk of `require.cache`), and only then
// named after its function. Ours are functions of ES modules, which are never in that cache, so the
// walk always ends at the function's name, after comparing it with every module loaded: about 80
// plugins a build against some 500 modules in a service process and 1,500 in a test process, 6 ms
// of each test app's build (docs/development.md, "An eighteenth look"). The name it would reach is
// given first, as the display name Fastify reads before walking; the names stay what they were.

export const DISPLAY_NAME = Symbol.for('fastify.display-name')

/**
 * Every plugin registered on `app` or on any instance under it (each inherits `register` from the
 * root) is given its function's name as its display name, unless it has one (fastify-plugin's) or
 * no name (an arrow function: Fastify then shows its first lines, as before).
 */
export function nameEveryPlugin(app: FastifyInstance): void {
  const register = app.register
  app.register = function (this: FastifyInstance, plugin: unknown, options?: unknown) {
    if (typeof plugin === 'function' && plugin.name !== '' && !Object.hasOwn(plugin, DISPLAY_NAME)) {
      Object.defineProperty(plugin, DISPLAY_NAME, { value: plugin.name })
    }
    return (register as (this: FastifyInstance, plugin: unknown, options?: unknown) => FastifyInstance).call(this, plugin, options)
  } as typeof register
}
