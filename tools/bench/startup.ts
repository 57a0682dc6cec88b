import { startServer, type StartOptions } from './processes.ts'
import type { StartupSeries } from './results.ts'

// Start-up: each server alone, from spawning the process to its first answer, the starts of all
// servers interleaved so a busy moment on the machine falls on several of them, not one.

export type StartupPlan = Omit<StartOptions, 'logDir' | 'baseUrl' | 'siteUrl'>

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export async function measureStartups(
  plans: StartupPlan[],
  starts: number,
  common: Pick<StartOptions, 'logDir' | 'baseUrl' | 'siteUrl'>,
  log: (line: string) => void,
): Promise<StartupSeries[]> {
  const series: StartupSeries[] = plans.map((plan) => ({ name: plan.name, ms: [], status: [], memory: [] }))
  for (let i = 0; i < starts; i++) {
    for (const [index, plan] of plans.entries()) {
      const server = await startServer({ ...common, ...plan, name: `startup-${index}-${i}` })
      // Memory once the first answer is out and the process has settled for a moment.
      await sleep(500)
      series[index].ms.push(server.startupMs)
      series[index].status.push(server.firstStatus)
      series[index].memory.push(server.rss())
      await server.stop()
    }
  }
  for (const s of series) {
    if (s.status.some((status) => status !== 200)) throw new Error(`start-up ${s.name}: first answers ${s.status.join(', ')}, not 200`)
    log(`start-up ${s.name}: ${s.ms.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}`)
  }
  return series
}
