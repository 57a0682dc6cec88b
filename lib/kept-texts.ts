/**
 * Texts made once and kept by a key that names everything they are made from, at most `maxChars`
 * characters of keys and texts together, the oldest made going first: a full cache only makes
 * texts again. For the JSON of a discussion in a listing (routes/api/discussions/views.ts), keyed
 * by the discussion's version, which moves with every change to what it shows, and the digests of
 * entity tags (lib/entity-tags.ts), keyed by what they digest.
 */
export function createKeptTexts(maxChars: number): (key: string, make: () => string) => string {
  const texts = new Map<string, string>()
  let chars = 0
  return (key, make) => {
    let text = texts.get(key)
    if (text !== undefined) return text
    text = make()
    texts.set(key, text)
    chars += key.length + text.length
    for (const [oldKey, oldText] of texts) {
      if (chars <= maxChars) break
      texts.delete(oldKey)
      chars -= oldKey.length + oldText.length
    }
    return text
  }
}
