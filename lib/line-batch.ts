/**
 * The request log's lines gathered into writes of about `bytes` each (cli/serve.ts), handed to a
 * stream that writes them out asynchronously (pino's SonicBoom). SonicBoom can gather lines itself
 * (`minLength`), but it appends each line to one growing string and measures that string's bytes
 * at every line, which copies it whole each time: 4% of a busy service's time for a 4 KB batch.
 * Here a line is kept as it came, counted by its length, and joined once per write.
 */
export class LineBatch {
  readonly #target: { write(text: string): unknown }
  readonly #bytes: number
  #lines: string[] = []
  #length = 0

  constructor(target: { write(text: string): unknown }, bytes: number) {
    this.#target = target
    this.#bytes = bytes
  }

  write(line: string): boolean {
    this.#lines.push(line)
    this.#length += line.length
    if (this.#length >= this.#bytes) this.flush()
    return true
  }

  /** Hands on whatever is gathered, at once. */
  flush(): void {
    if (this.#lines.length === 0) return
    const text = this.#lines.join('')
    this.#lines = []
    this.#length = 0
    this.#target.write(text)
  }
}
