/**
 * Reads public-but-opaque facts out of a stream or cursor token — without
 * verifying it, which only the server can do, and without the tokens
 * package, whose keyring and HMAC a caller that never signs or verifies
 * should not load (the CLI's `invoke` names output streams by their ids and
 * positions, and loading the tokens package cost it 35–70 ms at start). The
 * client needs them for one thing: resuming from a checkpoint written by
 * another process, where it holds cursor tokens but not which stream each
 * belongs to, and must
 *
 * - replace a stream's old cursor once it delivers a newer one (protocol 5.2
 *   allows at most one cursor per output stream): the stream identity;
 * - know that a stream whose *terminal* cursor it inherited is complete — the
 *   server replays nothing for it (protocol 6.5) — instead of waiting for an
 *   end that never comes: the cursor's event kind;
 * - drop what a replay repeats up to the item it inherited the cursor of (a
 *   retried resume may carry an older cursor than the one saved beside it): the
 *   cursor's position.
 *
 * Token layout: protocol 10.1, decisions §4. Anything unreadable yields
 * `undefined`; callers then treat the token as an identity of its own and its
 * event as unknown. Bounded: tokens longer than the protocol limit are not
 * decoded at all. A forged token can only mislead this process about its own
 * bookkeeping; the server verifies every token it is sent.
 */
import { LIMITS } from "./limits.js";

const PREFIX = "gai1_";
const SIGNATURE_BYTES = 32;
const STREAM_ID_FIELD = 32;
const CURSOR_POSITION_FIELD = 48;
const CURSOR_EVENT_FIELD = 49;
const CURSOR_KIND = 3;
const TERMINAL_EVENT = 2n;

/** The stream id (field 32) as hex, from a stream or cursor token. */
export function streamIdentityOf(token: string): string | undefined {
  const field = readFields(token)?.fields.get(STREAM_ID_FIELD);
  return field === undefined ? undefined : Array.from(field, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Whether a cursor token names a stream's terminal event (field 49 = 2), as far as it can be read. */
export function isTerminalCursor(token: string): boolean {
  const read = readFields(token);
  if (read?.kind !== CURSOR_KIND) return false;
  const event = read.fields.get(CURSOR_EVENT_FIELD);
  return event !== undefined && event.length === 8 && viewOf(event).getBigUint64(0) === TERMINAL_EVENT;
}

/** The position (field 48: the logical items before its event) of a cursor token of an item, as far as it can be read. */
export function itemCursorPosition(token: string): bigint | undefined {
  const read = readFields(token);
  if (read?.kind !== CURSOR_KIND) return undefined;
  const event = read.fields.get(CURSOR_EVENT_FIELD);
  const position = read.fields.get(CURSOR_POSITION_FIELD);
  if (event?.length !== 8 || viewOf(event).getBigUint64(0) === TERMINAL_EVENT || position?.length !== 8) return undefined;
  return viewOf(position).getBigUint64(0);
}

function readFields(token: string): { kind: number; fields: Map<number, Uint8Array> } | undefined {
  if (token.length > LIMITS.maxTokenBytes || !token.startsWith(PREFIX)) return undefined;
  const body = token.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]*$/.test(body)) return undefined;
  const bytes = fromBase64Url(body);
  if (bytes === undefined) return undefined;
  const view = viewOf(bytes);
  const payloadEnd = bytes.length - SIGNATURE_BYTES;
  if (payloadEnd < 3) return undefined;
  const kind = bytes[1]!;
  let at = 2; // format version, token kind
  const keyIdLength = bytes[at++]!;
  at += keyIdLength;
  const fields = new Map<number, Uint8Array>();
  let previous = 0;
  while (at + 5 <= payloadEnd) {
    const field = bytes[at]!;
    const length = view.getUint32(at + 1);
    at += 5;
    // Out of order or past the payload: not a token this client can read.
    if (field <= previous || at + length > payloadEnd) return undefined;
    fields.set(field, bytes.subarray(at, at + length));
    previous = field;
    at += length;
  }
  return at === payloadEnd ? { kind, fields } : undefined;
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** base64url without padding (RFC 4648 §5) to bytes, with `atob` (Node, browsers, Deno, Bun alike); undefined if malformed. */
function fromBase64Url(text: string): Uint8Array | undefined {
  if (text.length % 4 === 1) return undefined;
  let binary: string;
  try {
    binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  } catch {
    return undefined;
  }
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
