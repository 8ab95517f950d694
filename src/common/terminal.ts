// What the CLI writes to a terminal. Captions, ids, file names, errors and anything else a server answers
// may hold characters a terminal acts on (ESC starts a sequence that can clear the screen, retitle the
// window or plant an OSC 8 link; a line break or a carriage return forges lines of a table; a bidi
// override reorders what follows): each is written escaped, so it is seen, never obeyed.

/**
 * C0 controls (line breaks and tabs too), DEL, C1 controls, the line and paragraph separators, and the
 * bidi embeddings, overrides and isolates.
 */
// eslint-disable-next-line no-control-regex
const unsafe = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** What JSON.stringify leaves unescaped of `unsafe` (its only raw C0 are the line breaks of its indentation). */
const unsafeInJson = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escaped(char: string): string {
  const code = char.charCodeAt(0);
  return named[char] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
}

/**
 * One line's worth of text, safe to write to a terminal: every character of `unsafe` as `\n`, `\x1b`,
 * `\u202e`…. Applying it twice changes nothing more (a backslash is left as it is).
 */
export function terminalText(text: string): string {
  return text.replace(unsafe, escaped);
}

const hasUnsafe = new RegExp(unsafe.source);

/**
 * A word for a POSIX shell's command line, as the CLI prints commands to copy: single-quoted, or, when
 * it holds characters of `unsafe`, in bash's `$'…'` with them escaped, which bash reads back as they were.
 */
export function shellQuoted(text: string): string {
  if (!hasUnsafe.test(text)) return `'${text.replace(/'/g, `'\\''`)}'`;
  return `$'${text.replace(/[\\']/g, (char) => `\\${char}`).replace(unsafe, escaped)}'`;
}

/** Lines the CLI composed, each made safe: only the CLI's own line breaks remain. */
export function terminalLines(lines: readonly string[]): string {
  return lines.map(terminalText).join('\n');
}

/**
 * A value as JSON (indented by `indent`; 0 for one line) that is safe on a terminal and parses back to the same value: JSON.stringify
 * escapes C0 controls but writes DEL, C1 controls, the separators and bidi characters as they are.
 */
export function terminalJson(value: unknown, indent = 2): string {
  return JSON.stringify(value, null, indent).replace(unsafeInJson, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Writes the CLI's text to stdout or stderr. Its line breaks are kept; everything else of `unsafe` in a
 * line is escaped, so a value that slipped in unescaped still cannot act on the terminal.
 */
export function say(text: string, stream: NodeJS.WriteStream = process.stdout): void {
  stream.write(`${terminalLines(text.split('\n'))}\n`);
}
