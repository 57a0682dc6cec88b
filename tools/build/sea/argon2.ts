import { loadAddon } from './resources.ts'

// Stands in for @node-rs/argon2 inside the single executable: its index.js looks for the addon in
// node_modules; this is the same addon, unpacked from the executable (tools/build/sea/resources.ts).
type Argon2 = typeof import('@node-rs/argon2')
const binding = loadAddon('native/argon2.node') as Argon2

export const hash: Argon2['hash'] = binding.hash
export const hashSync: Argon2['hashSync'] = binding.hashSync
export const hashRaw: Argon2['hashRaw'] = binding.hashRaw
export const hashRawSync: Argon2['hashRawSync'] = binding.hashRawSync
export const verify: Argon2['verify'] = binding.verify
export const verifySync: Argon2['verifySync'] = binding.verifySync
