import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { SearchAnswer, SearchResult, SearchStore, Searcher } from '../../db/stores/search.ts'
import { shownMoment } from '../../lib/clock.ts'
import { MAX_QUERY, snippetParts } from '../../lib/search-text.ts'
import { pageData, queryString, refusalOf, requireSupporter } from './pages.ts'
import { PAGE, whole } from './queue.ts'

// Search on the pages (docs/decisions.md, "Search"): the staff's at {site_url}/search, over every
// discussion and the team's notes; the customers' at {site_url}/help/search (routes/web/customers.ts),
// over their own and the public ones. One query language with the API's (lib/search-text.ts); the
// snippets' matches marked, every piece escaped by the view.

/** How many results a page shows. */
export const SEARCH_PAGE = 20

export interface PageSearch {
  q: string
  /** Why the query cannot be read, or null. */
  problem: string | null
  total: number
  capped: boolean
  results: SearchResult[]
  page: number
  pages: number
  /** The address of another page of the same search, or null when there is none. */
  previous: string | null
  next: string | null
}

/** Runs the search a page asks for (`?q=&page=`), the refusal of a query that cannot be read kept as its reason. */
export async function searchForPage(search: SearchStore, request: FastifyRequest, siteId: number, searcher: Searcher, address: string): Promise<PageSearch> {
  const asked = request.query as { q?: unknown; page?: unknown }
  const q = typeof asked.q === 'string' ? asked.q.trim().slice(0, MAX_QUERY) : ''
  const page = whole(asked.page) ?? 1
  const none = { q, problem: null, total: 0, capped: false, results: [], page, pages: 1, previous: null, next: null }
  if (q === '') return none
  let found: SearchAnswer | undefined
  // A query that cannot be read is said on the page (refusalOf: the store's `invalid`).
  const refused = await refusalOf(async () => {
    found = await search.find({ siteId, searcher, q, offset: (page - 1) * SEARCH_PAGE, limit: SEARCH_PAGE })
  }, ['invalid'])
  if (refused) return { ...none, problem: `The search ${refused.message}.` }
  const pages = Math.max(1, Math.ceil(found!.total / SEARCH_PAGE))
  const at = (n: number) => `${address}${queryString({ q, page: n === 1 ? undefined : n })}`
  return { ...none, ...found!, pages, previous: page > 1 ? at(page - 1) : null, next: page < pages ? at(page + 1) : null }
}

/** A result as a page lists it: the discussion's facts and its snippet in pieces (each a match or not). */
export function shownResult(result: SearchResult, href: string) {
  const { discussion: d, snippet } = result
  return {
    number: d.number,
    title: d.title,
    state: d.state,
    lastActivity: shownMoment(d.lastUpdatedAt),
    href,
    where: snippet === null ? null : snippet.comment === null ? 'Title' : snippet.comment === 1 ? 'Opening post' : `Comment ${snippet.comment}`,
    parts: snippet === null ? [] : snippetParts(snippet),
  }
}

const searchRoutes: FastifyPluginAsync = async (fastify) => {
  const { discussionSearch, urls } = fastify

  fastify.get('/search', { ...PAGE, preHandler: requireSupporter }, async (request, reply) => {
    const { site, user } = request.web
    const base = urls.siteWeb(site.permalink)
    const found = await searchForPage(discussionSearch, request, site.id, { staff: true, userId: user!.id }, `${base}/search`)
    return reply.page(
      'search',
      pageData(request, reply, {
        title: found.q === '' ? 'Search' : `Search: ${found.q}`,
        ...found,
        results: found.results.map((r) => shownResult(r, `${base}/discussions/${r.discussion.number}`)),
        action: `${base}/search`,
      }),
      found.problem ? 400 : 200,
    )
  })
}

export default searchRoutes
