import { and, asc, count, eq, sql } from '../drizzle.ts'
import { onFirstUse, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { isUniqueViolation } from '../../lib/database-errors.ts'
import { holdsNul } from '../../lib/nul.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { lockSite } from './sites.ts'
import { checkActions } from './rules.ts'
import { MAX_ACTIONS, type FieldAction } from '../../lib/rules.ts'

// A site's saved replies (docs/decisions.md, "The team's queue"): written by its administrators,
// chosen by any supporter in the reply form, the API and MCP, their placeholders filled in for the
// discussion they answer (lib/team-queue.ts, fillSavedReply). One store for both engines.

export type SavedReply = Tables['savedReplies']['$inferSelect']

/** The most saved replies a site keeps, the longest title, and the longest text (the API's comment body). */
export const MAX_SAVED_REPLIES = 200
export const MAX_SAVED_TITLE = 100
export const MAX_SAVED_BODY = 65_536

export interface SavedReplyInput {
  title?: string
  body?: string
  /** A macro's actions (issue 70): what applying it does besides replying. */
  actions?: FieldAction[]
}

function checked(input: SavedReplyInput): SavedReplyInput {
  const title = input.title?.trim()
  if (title !== undefined && (title === '' || title.length > MAX_SAVED_TITLE || holdsNul(title))) {
    throw new StoreError(`must be 1 to ${MAX_SAVED_TITLE} characters, without U+0000`, 'invalid', 'title')
  }
  const body = input.body
  if (body !== undefined && (body.trim() === '' || body.length > MAX_SAVED_BODY || holdsNul(body))) {
    throw new StoreError(`must be 1 to ${MAX_SAVED_BODY} characters, without U+0000`, 'invalid', 'body')
  }
  if (input.actions && input.actions.length > MAX_ACTIONS) throw new StoreError(`a macro has at most ${MAX_ACTIONS} actions`, 'invalid', 'actions')
  return { title, body, actions: input.actions }
}

/** The unique title's refusal, from the database's own (two writes at once cannot both pass). */
async function titleUnique<T>(title: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (isUniqueViolation(error)) throw new StoreError(`is "${title}", which another saved reply of this site has`, 'conflict', 'title')
    throw error
  }
}

export function createSavedReplyStore(port: StorePort, clock: Clock) {
  const { db, tables: { savedReplies } } = port
  const p = sql.placeholder
  const listStatement = onFirstUse(() => db.select().from(savedReplies).where(eq(savedReplies.siteId, p('siteId'))).orderBy(port.folded(savedReplies.title), asc(savedReplies.id)).prepare('saved_replies_list'))
  const findStatement = onFirstUse(() => db
    .select()
    .from(savedReplies)
    .where(and(eq(savedReplies.siteId, p('siteId')), eq(savedReplies.id, port.wide(p('id')))))
    .prepare('saved_replies_find'))
  const notFound = (id: number) => new StoreError(`there is no saved reply ${id} on this site`, 'not_found', 'id')

  return {
    /** Every saved reply of the site, by title. */
    list: (siteId: number): Promise<SavedReply[]> => listStatement.execute({ siteId }),

    find: async (siteId: number, id: number): Promise<SavedReply | undefined> => (await findStatement.execute({ siteId, id }))[0],

    /** A new saved reply; at most MAX_SAVED_REPLIES a site (counted under the site's lock). */
    async add(siteId: number, input: Omit<SavedReplyInput, 'actions'> & Required<Pick<SavedReplyInput, 'title' | 'body'>> & Pick<SavedReplyInput, 'actions'>, by?: Actor): Promise<SavedReply> {
      const { title, body, actions = [] } = checked(input) as Required<SavedReplyInput>
      return titleUnique(title, () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const [{ n }] = await tx.db.select({ n: count() }).from(savedReplies).where(eq(savedReplies.siteId, siteId))
          if (Number(n) >= MAX_SAVED_REPLIES) throw new StoreError(`a site keeps at most ${MAX_SAVED_REPLIES} saved replies; remove one first`, 'limit')
          const at = new Date(clock())
          const checkedActions = await checkActions(tx, siteId, actions)
          const [row] = await tx.db.insert(savedReplies).values({ siteId, title, body, actions: JSON.stringify(checkedActions), createdAt: at, updatedAt: at }).returning()
          await recordChange(tx, clock, by, siteId, 'saved_reply.created', title)
          return row!
        }),
      )
    },

    async update(siteId: number, id: number, input: SavedReplyInput, by?: Actor): Promise<SavedReply> {
      const { title, body, actions } = checked(input)
      const mine = and(eq(savedReplies.siteId, siteId), eq(savedReplies.id, port.wide(id)))
      return titleUnique(title, () =>
        port.atomic(async (tx) => {
          const [before] = await tx.db.select().from(savedReplies).where(mine)
          if (!before) throw notFound(id)
          const kept = actions === undefined ? undefined : JSON.stringify(await checkActions(tx, siteId, actions))
          const [row] = await tx.db
            .update(savedReplies)
            .set({ ...(title !== undefined && { title }), ...(body !== undefined && { body }), ...(kept !== undefined && { actions: kept }), updatedAt: new Date(clock()) })
            .where(mine)
            .returning()
          // Its title before and after; of its text, that it changed (a saved reply may be long).
          const difference = changedFields({ title: before.title, text_changed: false, actions: before.actions }, { title: row!.title, text_changed: row!.body !== before.body, actions: row!.actions })
          if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'saved_reply.changed', before.title, difference)
          return row!
        }),
      )
    },

    async remove(siteId: number, id: number, by?: Actor): Promise<void> {
      await port.atomic(async (tx) => {
        const [removed] = await tx.db.delete(savedReplies).where(and(eq(savedReplies.siteId, siteId), eq(savedReplies.id, port.wide(id)))).returning({ title: savedReplies.title })
        if (!removed) throw notFound(id)
        await recordChange(tx, clock, by, siteId, 'saved_reply.removed', removed.title)
      })
    },
  }
}

export type SavedReplyStore = ReturnType<typeof createSavedReplyStore>
