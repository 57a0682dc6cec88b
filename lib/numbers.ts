// A whole number with its thousands grouped by commas, as English writes it ("10,000"), without
// ICU: `Number.prototype.toLocaleString` pages the number-format data of the node binary in (about
// 5 MB of a process's resident memory), which one call while the modules load did for every start
// (docs/decisions.md, "What a start paid for without asking").

/** `n` (a whole number) with commas between its groups of three digits. */
export function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}
