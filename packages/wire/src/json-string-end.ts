/**
 * Where a JSON string ends, for the scanners that walk JSON text without
 * parsing it (the strict parser's pre-scan, the attempt-id recovery and the
 * walk that finds rounded integers in a parsed document).
 */

const BACKSLASH = 0x5c;

/** Index of the closing quote of a string whose body starts at `start`, or -1. */
export function findStringEnd(text: string, start: number): number {
  let i = start;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return -1;
    // The quote is escaped when an odd number of backslashes precede it.
    // Each backslash run is counted once, so the whole scan stays linear.
    let backslashes = 0;
    for (let j = quote - 1; j >= start && text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}
