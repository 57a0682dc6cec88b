import fp from 'fastify-plugin'
import { repeatInBackground } from './background.ts'

// SLA warnings and breaches (issue 68; docs/decisions.md, "SLA policies"): every half minute, each
// process tells what is due (db/stores/discussions.ts, tellAlerts): a webhook event and a mail to
// the owner or the team, queued in the outbox in the transaction that marks the alert told, under
// the discussion's row lock. However many processes run it, each alert is told once; one told
// late (every process down at its time) is told at the next run, never lost. The rules on time
// (issue 70; db/stores/rules.ts runDue) fire in the same loop, after the alerts, on the same terms.

export const SLA_ALERTS_EVERY_MS = 30_000
/** Discussions looked at per transaction batch; a run goes on while batches come back full. */
const BATCH = 100

declare module 'fastify' {
  interface FastifyInstance {
    slaAlerts: { tellDue(): Promise<number>; fireRules(): Promise<number> }
  }
}

export default fp<{ everyMs?: number }>(
  async (fastify, { everyMs = SLA_ALERTS_EVERY_MS }) => {
    async function tellDue(): Promise<number> {
      let told = 0
      for (;;) {
        const batch = await fastify.discussions.tellAlerts(BATCH)
        told += batch.alerts
        if (batch.discussions < BATCH) return told
      }
    }
    const fireRules = () => fastify.rules.runDue(BATCH)
    fastify.decorate('slaAlerts', { tellDue, fireRules })
    repeatInBackground(fastify, { firstAfterMs: everyMs, everyMs }, async () => {
      try {
        const told = await tellDue()
        if (told > 0) fastify.log.info({ sla_alerts: told }, 'SLA warnings and breaches told')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not tell the SLA warnings and breaches')
      }
      try {
        const fired = await fireRules()
        if (fired > 0) fastify.log.info({ rules_fired: fired }, 'rules on time fired')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not fire the rules on time')
      }
    })
  },
  { name: 'sla-alerts', fastify: '5.x', dependencies: ['discussion-stores'] },
)
