/**
 * Recovering the attempt id of a first message that failed to decode, so
 * that the server can answer with a safe `invocationRejected` that names the
 * attempt (protocol sections 6.2 and 11) instead of closing silently.
 *
 * Only the top level is read. Nested values are skipped by counting
 * brackets, with memory that does not grow with depth: a message rejected
 * for nesting too deep, or for anything wrong inside its values, still
 * names its attempt. Whatever is ambiguous (a repeated member, a broken top
 * level) recovers nothing.
 */
import { isUuidV4 } from "./fields.js";
import { LIMITS } from "./limits.js";
import { findStringEnd, toText } from "./strict-json.js";

const WANTED = new Set(["type", "attemptId"]);

/**
 * The `attemptId` of a first message that failed to decode, when it can be
 * recovered: a text frame within the size limit whose top level is a JSON
 * object, with nothing but whitespace after it, holding exactly one `type`,
 * naming `invocationStart` or `resumeAttach`, and exactly one `attemptId`
 * that is a lower-case UUIDv4.
 * Never throws; anything else gives `undefined`.
 */
export function recoverAttemptId(data: string | Uint8Array, isBinary = false): string | undefined {
  if (isBinary !== false) return undefined;
  let text: string;
  try {
    text = toText(data, LIMITS.maxTextMessageBytes, "text message");
  } catch {
    return undefined;
  }
  const members = readTopLevelStrings(text);
  if (members === undefined) return undefined;
  const type = members.get("type");
  if (type !== "invocationStart" && type !== "resumeAttach") return undefined;
  const attemptId = members.get("attemptId");
  return isUuidV4(attemptId) ? attemptId : undefined;
}

/** The wanted top-level members whose values are strings, or undefined when the top level is not a clean object. */
function readTopLevelStrings(text: string): Map<string, string | null> | undefined {
  const found = new Map<string, string | null>();
  let i = skipSpace(text, 0);
  if (text[i] !== "{") return undefined;
  i = skipSpace(text, i + 1);
  if (text[i] === "}") return endsAfter(text, i, found);
  for (;;) {
    if (text[i] !== '"') return undefined;
    const nameEnd = findStringEnd(text, i + 1);
    if (nameEnd < 0) return undefined;
    const name = parseString(text, i, nameEnd);
    if (name === undefined) return undefined;
    i = skipSpace(text, nameEnd + 1);
    if (text[i] !== ":") return undefined;
    i = skipSpace(text, i + 1);
    let valueEnd: number;
    let value: string | null = null;
    if (text[i] === '"') {
      const end = findStringEnd(text, i + 1);
      if (end < 0) return undefined;
      if (WANTED.has(name)) value = parseString(text, i, end) ?? null;
      valueEnd = end + 1;
    } else {
      valueEnd = skipValue(text, i);
      if (valueEnd <= i) return undefined;
    }
    if (WANTED.has(name)) {
      // A repeated member is ambiguous: recover nothing rather than guess.
      if (found.has(name)) return undefined;
      found.set(name, value);
    }
    i = skipSpace(text, valueEnd);
    if (text[i] === "}") return endsAfter(text, i, found);
    if (text[i] !== ",") return undefined;
    i = skipSpace(text, i + 1);
  }
}

/**
 * `found` when nothing but whitespace follows the object's closing brace at
 * `close`: text after it (a second object, garbage) makes the message
 * something other than one object, and what it names is not trusted.
 */
function endsAfter(text: string, close: number, found: Map<string, string | null>): Map<string, string | null> | undefined {
  return skipSpace(text, close + 1) === text.length ? found : undefined;
}

/** End (exclusive) of a non-string value starting at `start`; nested containers are skipped by depth count. */
function skipValue(text: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const end = findStringEnd(text, i + 1);
      if (end < 0) return -1;
      i = end + 1;
      if (depth === 0) return i;
      continue;
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (depth === 0) return i;
      if (--depth === 0) return i + 1;
    } else if (depth === 0 && (c === "," || c === " " || c === "\t" || c === "\n" || c === "\r")) {
      return i;
    }
    i++;
  }
  return depth === 0 ? i : -1;
}

function skipSpace(text: string, start: number): number {
  let i = start;
  while (i < text.length) {
    const c = text[i];
    if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") break;
    i++;
  }
  return i;
}

/** The JSON string token `text[start..end]` (quotes included), or undefined when it is not one. */
function parseString(text: string, start: number, end: number): string | undefined {
  try {
    const value: unknown = JSON.parse(text.slice(start, end + 1));
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}
