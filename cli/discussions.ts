import { seedSqliteDiscussions } from '../db/sqlite/seed.ts'
import { OPERATOR } from '../db/stores/audit.ts'
import { shown } from '../lib/terminal-text.ts'
import { grouped } from '../lib/numbers.ts'
import { admin } from './admin.ts'
import { UsageError, type Command, type Io } from './command.ts'

const MAX_SEED = 10_000_000

function parseCount(value: string | boolean | undefined): number {
  if (value === undefined) throw new UsageError('--discussions is required: say how many discussions to create')
  if (!/^[1-9]\d{0,7}$/.test(String(value)) || Number(value) > MAX_SEED) {
    throw new UsageError(`--discussions must be a whole number from 1 to ${grouped(MAX_SEED)}, not "${value}"`)
  }
  return Number(value)
}

function parseSeed(value: string | boolean | undefined): number {
  if (value === undefined) return 1
  if (!/^\d{1,9}$/.test(String(value))) throw new UsageError(`--seed must be a whole number, not "${value}"`)
  return Number(value)
}

/** A progress bar on stderr, redrawn in place: [#########...........]  45%  450,000/1,000,000  12,345/s */
export function progressBar(io: Io, started: number) {
  return (done: number, total: number) => {
    const width = 30
    const filled = Math.round((done / total) * width)
    const seconds = Math.max(1, io.clock() - started) / 1000
    const rate = grouped(Math.round(done / seconds))
    const percent = String(Math.floor((done / total) * 100)).padStart(3)
    const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent}%  ${grouped(done)}/${grouped(total)}  ${rate}/s`
    io.stderr(`\r${bar}${done === total ? '\n' : ''}`)
  }
}

export const discussionCommands: Command[] = [
  admin(
    {
      words: ['search', 'index'],
      args: [],
      options: { again: { type: 'boolean', about: 'index every discussion again, not only those not yet in the index' } },
      usage: 'search index [--again]',
      summary: 'Build the search index of the discussions not yet in it (older than the index), now; the service does it in the background by itself.',
      // Transactions of a batch each, so the service can write between them and the progress shows.
      atomic: false,
      faultScope: () => ({ outcome: 'The batches finished before it stay indexed; the service (or this command again) goes on from there.' }),
    },
    async ({ engine }, _args, values, io) => {
      const search = engine.search()
      if (values.again === true) await search.reindexAll()
      const waiting = await search.waiting()
      const started = io.clock()
      const bar = progressBar(io, started)
      const indexed = waiting === 0 ? 0 : await search.backfillAll({ batch: 2_000, onBatch: (done) => bar(Math.min(done, waiting), waiting) })
      io.stdout(`${indexed} discussions indexed for search in ${((io.clock() - started) / 1000).toFixed(1)} s\n`)
    },
  ),
  admin(
    {
      words: ['category', 'add'],
      args: ['<site>', '<name>'],
      options: { public: { type: 'boolean', about: 'its discussions are public (customers see each other\'s); private by default' } },
      usage: 'category add <site> <name> [--public]',
      summary: 'Create a category; its discussions are public by default with --public. Prints its id.',
    },
    async ({ sites, categories }, [permalink, name], values, io) => {
      const site = await sites.get(permalink)
      const category = await categories.add(site.id, name, values.public === true, OPERATOR)
      const visibility = category.public ? 'public' : 'private'
      io.stdout(`category ${category.id} created: "${shown(category.name)}" (${category.permalink}, ${visibility}) on ${site.permalink}\n`)
    },
  ),
  admin(
    {
      words: ['category', 'list'],
      args: ['<site>'],
      usage: 'category list <site>',
      summary: 'One line per category: id, permalink, public or private, name.',
      atomic: false,
    },
    async ({ sites, categories }, [permalink], _values, io) => {
      const site = await sites.get(permalink)
      for (const c of (await categories.list(site.id, 0, -1)).categories) {
        io.stdout(`${c.id}\t${c.permalink}\t${c.public ? 'public' : 'private'}\t${shown(c.name)}\n`)
      }
    },
  ),
  admin(
    {
      words: ['seed'],
      args: ['<site>'],
      options: {
        discussions: { type: 'string', value: 'N', about: 'how many discussions to add (required)' },
        seed: { type: 'string', value: 'S', about: 'the random seed: the same seed makes the same discussions on either engine', fallback: '1' },
      },
      usage: 'seed <site> --discussions N [--seed S]',
      summary: 'Fill a site with N generated discussions and their comments (for demos and benchmarks).',
      // Transactions of a batch each, so the server can write between them and the progress shows.
      atomic: false,
      faultScope: () => ({ outcome: 'The discussions of the batches finished before it were kept, each batch whole; nothing is half-written.' }),
    },
    async ({ engine, postgres, box, sites }, [permalink], values, io) => {
      const count = parseCount(values.discussions)
      const seed = parseSeed(values.seed)
      const site = await sites.get(permalink)
      const started = io.clock()
      const options = { seed, onProgress: progressBar(io, started) }
      let seeded
      // Each engine's bulk path (db/sqlite/seed.ts, db/postgres/seed.ts), one transaction a batch:
      // the same discussions, comments and customers on both for the same seed.
      if (postgres) {
        const { seedPostgresDiscussions } = await import('../db/postgres/seed.ts')
        seeded = await seedPostgresDiscussions(postgres, io.clock, box, site, count, options)
      } else {
        seeded = await seedSqliteDiscussions(engine.sqlite!, io.clock, box, site, count, options)
      }
      const seconds = ((io.clock() - started) / 1000).toFixed(1)
      io.stdout(
        `${seeded.discussions} discussions with ${seeded.comments} comments by ${seeded.customers} customers added to ${site.permalink} in ${seconds} s\n`,
      )
    },
  ),
]
