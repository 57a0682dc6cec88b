import type { DiscussionState } from '../values.ts'

// The states of a discussion and what moves them (docs/decisions.md, "Discussions (v1 shape)").

export const actions = ['resolve', 'unresolve', 'toggle', 'restore', 'delete', 'spam', 'not_spam'] as const
export type Action = (typeof actions)[number]

/** The state a discussion starts in: a supporter's own is answered already; anyone else's is new. */
export function initialState(bySupporter: boolean): DiscussionState {
  return bySupporter ? 'open' : 'new'
}

/**
 * docs/decisions.md: a staff reply moves new to open; a customer reply moves resolved to open; a
 * note (the staff's, or an automatic mail kept as one: docs/decisions.md, "Mail") moves nothing.
 */
export function stateAfterComment(state: DiscussionState, bySupporter: boolean, internal: boolean): DiscussionState {
  if (internal) return state
  if (bySupporter) return state === 'new' ? 'open' : state
  return state === 'resolved' ? 'open' : state
}

/**
 * The state an action leads to. Only restore and delete apply to a deleted discussion. Deleted and
 * spam keep the state they were taken from (`before`), which restore and not_spam give back; a
 * discussion that arrived as spam was new.
 */
export function stateAfterAction(state: DiscussionState, action: Action, before: DiscussionState | null): DiscussionState {
  switch (action) {
    case 'delete':
      return 'deleted'
    case 'restore':
      return state === 'deleted' ? (before ?? 'open') : state
    case 'spam':
      return 'spam'
    case 'not_spam':
      return state === 'spam' ? (before ?? 'new') : state
    case 'resolve':
      return 'resolved'
    case 'unresolve':
      return state === 'resolved' ? 'open' : state
    case 'toggle':
      return state === 'resolved' ? 'open' : 'resolved'
  }
}
