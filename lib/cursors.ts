// The cursors of the API (docs/decisions.md, "Safe retries, cursors and the change feed"): opaque
// to a client, which sends back what a Link or next_cursor gave it. Each names what it walks (a
// listing of discussions, a discussion's comments, the change feed, a site's record of changes) and where it stopped, so a
// cursor of one walk sent to another is refused instead of read as a position there.

export type CursorKind = 'discussions' | 'comments' | 'changes' | 'audit'

const PREFIX: Record<CursorKind, string> = { discussions: 'd', comments: 'c', changes: 'f', audit: 'a' }

/** The cursor of a walk of `kind` that goes on after `position` (a number the walk orders by). */
export function cursorOf(kind: CursorKind, position: number): string {
  return Buffer.from(`v1.${PREFIX[kind]}.${position}`).toString('base64url')
}

/**
 * Where a cursor of `kind` stopped; undefined when the text is not one this API gives for that
 * walk. The empty cursor starts a walk: `start` is where it begins.
 */
export function positionOf(kind: CursorKind, text: string, start: number): number | undefined {
  if (text === '') return start
  const match = /^v1\.([dcfa])\.(\d{1,15})$/.exec(Buffer.from(text, 'base64url').toString('latin1'))
  if (!match || match[1] !== PREFIX[kind]) return undefined
  return Number(match[2])
}
