import http from 'node:http'
import autocannon, { type RequestData } from 'autocannon'

// One measurement: autocannon's programmatic API at a fixed number of connections for a fixed
// time. Latencies are taken from autocannon's per-response event, with microsecond precision and
// for every status (its own histogram keeps whole milliseconds of 2xx answers only).

export interface Target {
  url: string
  method?: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: string
  /** Called for every request, to change what is sent (a different account each time). */
  setupRequest?: (request: RequestData) => RequestData
  /** The status every answer must have; any other counts as unexpected. */
  expect: number
}

export interface Measurement {
  requests: number
  seconds: number
  rps: number
  p50: number
  p99: number
  mean: number
  /** Answers with another status than expected, errors and timeouts: a measurement with any is flagged. */
  unexpected: number
  statuses: Record<string, number>
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  // Nearest rank, as HdrHistogram reports percentiles.
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]
}

export async function measure(target: Target, options: { duration: number; connections: number }): Promise<Measurement> {
  let latencies = new Float64Array(1 << 16)
  let count = 0
  const statuses: Record<string, number> = {}
  const instance = autocannon({
    url: target.url,
    connections: options.connections,
    duration: options.duration,
    // A first Basic call waits for argon2 behind the others: allow it.
    timeout: 30,
    method: target.method ?? 'GET',
    headers: { ...target.headers, ...(target.body ? { 'content-type': 'application/json' } : {}) },
    ...(target.body ? { body: target.body } : {}),
    requests: [{ path: target.path, ...(target.setupRequest ? { setupRequest: target.setupRequest } : {}) }],
  })
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2)
      grown.set(latencies)
      latencies = grown
    }
    latencies[count++] = responseTime
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
  })
  const result = await instance
  const sorted = latencies.subarray(0, count).sort()
  const seconds = (result.finish.getTime() - result.start.getTime()) / 1000
  let sum = 0
  for (const value of sorted) sum += value
  const unexpected = count - (statuses[target.expect] ?? 0) + result.errors + result.timeouts
  return {
    requests: count,
    seconds,
    rps: count / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sum / count,
    unexpected,
    statuses,
  }
}

/** One GET on a kept-alive agent (one request at a time): its time in ms, its status and its body. */
export function timedGet(agent: http.Agent, url: string, headers: Record<string, string>): Promise<{ ms: number; status: number; body: string }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const sent = http.get(url, { agent, headers }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      response.on('end', () => resolve({ ms: performance.now() - started, status: response.statusCode!, body }))
    })
    sent.on('error', reject)
  })
}
