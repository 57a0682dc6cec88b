import fp from 'fastify-plugin'
import { createCompanySignIn, type CompanySignIn } from '../lib/company-sign-in.ts'

// Staff sign in with the company's account (issue 73; routes/web/company-sign-in.ts): the protocol
// with the sites' identity providers, one per process, so each provider's discovered configuration
// and published keys are fetched once an hour, not at each sign-in.

declare module 'fastify' {
  interface FastifyInstance {
    companySignIn: CompanySignIn
  }
}

export default fp(
  async (fastify) => {
    fastify.decorate('companySignIn', createCompanySignIn())
  },
  { name: 'company-sign-in', fastify: '5.x' },
)
