// The part of autocannon's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface RequestData {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }
  export interface Options extends RequestData {
    url: string
    connections?: number
    duration?: number
    amount?: number
    timeout?: number
    pipelining?: number
    requests?: Array<RequestData & { setupRequest?: (request: RequestData, context: object) => RequestData }>
  }
  export interface Result {
    duration: number
    start: Date
    finish: Date
    errors: number
    timeouts: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
    requests: { average: number; total: number }
  }
  export interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void
  }
  function autocannon(options: Options): Instance
  export default autocannon
}
