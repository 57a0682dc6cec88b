// Text from a record, as it can be shown on a terminal (docs/decisions.md, "Command line"): control
// characters (a newline that forges a line, an escape sequence that retitles the terminal) and the
// marks that reorder what follows them become \u escapes. People and applications choose names,
// URLs and sources that the command line prints.

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

export function shown(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
