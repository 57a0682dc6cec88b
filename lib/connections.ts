import { readFileSync } from 'node:fs'
import type { Server, Socket } from 'node:net'
import type { RefusalLog } from './refusals.ts'

// The HTTP server's own defences for a service that faces the internet directly: how long a client
// may take to send a request, how long an idle keep-alive connection is kept, and how many
// connections are open at once (in all, and from one address). config.ts reads the settings;
// app.ts hands them to Fastify and Node and calls guardConnections.

export interface ConnectionSettings {
  /** The whole request, headers and body, from its first byte (Node's server.requestTimeout). */
  requestTimeoutMs: number
  /** The request line and headers, from the first byte or from the connection (server.headersTimeout). */
  headersTimeoutMs: number
  /** How long an idle keep-alive connection is kept after an answer (server.keepAliveTimeout). */
  keepAliveTimeoutMs: number
  /** Connections open at once; past it a new one is closed as soon as it is accepted. */
  maxConnections: number
  /** Connections open at once from one client address (the socket's peer); 0 for no such cap. */
  maxConnectionsPerAddress: number
}

export const DEFAULT_TIMEOUTS = { requestTimeoutMs: 30_000, headersTimeoutMs: 15_000, keepAliveTimeoutMs: 5_000 } as const

/** The default connection cap never goes past this, however many files the process may open: memory. */
export const MAX_DEFAULT_CONNECTIONS = 10_000

/** Assumed when the open-file limit cannot be read (no /proc): the usual soft limit. */
export const FALLBACK_OPEN_FILES = 1024

/**
 * The process's open-file limit (the soft one, which Node raises to the hard one at start), from
 * /proc/self/limits; the usual 1024 where that cannot be read (no /proc) or gives no number.
 */
export function openFileLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number {
  let text: string
  try {
    text = read()
  } catch {
    return FALLBACK_OPEN_FILES
  }
  const found = /^Max open files\s+(\d+)\s/m.exec(text)
  return found ? Number(found[1]) : FALLBACK_OPEN_FILES
}

let cachedLimit: number | undefined
/** openFileLimit() of this process, read once. */
export function processOpenFiles(): number {
  cachedLimit ??= openFileLimit()
  return cachedLimit
}

/**
 * Connections the open-file limit allows: every connection is a file descriptor, and room is kept
 * for the database (the file, its -wal and -shm, a backup), the logs, Node's own descriptors, and
 * the one a refused connection holds for a moment: a tenth of the limit, at least 64.
 */
export function connectionsAllowed(openFiles: number): number {
  return Math.max(1, openFiles - Math.max(64, Math.ceil(openFiles / 10)))
}

export function defaultMaxConnections(openFiles: number): number {
  return Math.min(MAX_DEFAULT_CONNECTIONS, connectionsAllowed(openFiles))
}

export function defaultConnectionSettings(openFiles: number = processOpenFiles()): ConnectionSettings {
  return { ...DEFAULT_TIMEOUTS, maxConnections: defaultMaxConnections(openFiles), maxConnectionsPerAddress: 0 }
}

/**
 * Node checks the headers and request timeouts of every open connection on an interval (30 s by
 * default, so a 15 s timeout could cut at 45 s): a tenth of the shorter timeout, from 25 ms to 1 s.
 */
export function checkingInterval(settings: Pick<ConnectionSettings, 'requestTimeoutMs' | 'headersTimeoutMs'>): number {
  const shorter = Math.min(settings.requestTimeoutMs, settings.headersTimeoutMs)
  return Math.min(1000, Math.max(25, Math.floor(shorter / 10)))
}

/** Fastify's server options for the timeouts (Fastify sets requestTimeout and keepAliveTimeout on the server). */
export function timeoutOptions(settings: ConnectionSettings) {
  return {
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    http: { headersTimeout: settings.headersTimeoutMs, connectionsCheckingInterval: checkingInterval(settings) },
  }
}

/**
 * The caps, and a log line for every connection they refuse. Past `maxConnections` Node closes a
 * new connection itself and says so with 'drop'; the cap per address closes a connection as soon as
 * it is accepted. A failed accept (out of file descriptors) is logged rather than thrown.
 */
export function guardConnections(server: Server, settings: ConnectionSettings, refusals: Pick<RefusalLog, 'record'>) {
  server.maxConnections = settings.maxConnections
  server.on('drop', (peer?: { remoteAddress?: string }) => refusals.record('connection_cap', { address: peer?.remoteAddress }))

  const perAddress = settings.maxConnectionsPerAddress
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    // Read now, while the peer is there: Node keeps it, so the refusal lines of a socket that is
    // gone by then can still name its address.
    const address = socket.remoteAddress
    if (perAddress === 0 || address === undefined) return
    const count = open.get(address) ?? 0
    if (count >= perAddress) {
      refusals.record('address_cap', { address })
      socket.destroy()
      return
    }
    open.set(address, count + 1)
    socket.once('close', () => {
      const left = open.get(address)! - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })

  // Once listening, the only 'error' a server emits is a failed accept (EMFILE, ENFILE: out of file
  // descriptors), and with no listener it would end the process: it is a refusal to log instead.
  // Added once listening, so that an error of listen() itself (a port in use) reaches Fastify's
  // listen, and the command line, alone.
  server.once('listening', () => {
    server.on('error', (error: Error & { code?: string }) => refusals.record('accept_failed', { code: error.code }))
  })
}
