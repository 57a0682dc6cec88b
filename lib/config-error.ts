/** A setting that cannot be used: start-up stops with this one clear line (cli/main.ts prints it). */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
