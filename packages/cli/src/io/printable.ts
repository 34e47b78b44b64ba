/**
 * Text a server or an agent chose (an agent type's or a field's name, an error's message), made
 * safe to print for a person. Written raw, its control characters would reach the terminal as
 * commands: `\x1b]0;…\x07` sets the window's title, `\x1b[2J` clears the screen, a carriage
 * return or a newline makes a line look like another one, and a bidi override (U+202E) shows the
 * text after it reversed. So every C0 control, DEL, every C1 control and the bidi embeddings,
 * overrides and isolates are written as JSON writes them (`\n`, `\t`, `\u001b`, `\u202e`); text
 * already JSON stays JSON that means the same. Everything else, other scripts and emoji
 * included, is left as it is.
 *
 * Not for what a command prints as its data (`--output json`, the items `invoke` prints): that
 * is the user's, byte for byte.
 */

/** C0 controls, DEL, C1 controls, and the bidi embeddings, overrides (U+202A–U+202E) and isolates (U+2066–U+2069). */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu;

/** The controls JSON writes as a backslash and a letter. */
const SHORT: Readonly<Record<string, string>> = { "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r" };

/** `text` with its control characters written as escapes (`esc\u001b]0;…`): one line a terminal shows as it is. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (char) => SHORT[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
