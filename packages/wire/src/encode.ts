/**
 * The encoding entry point: a typed message in, the exact bytes a conforming
 * peer expects out. Text messages are canonical JSON (section 2); binary
 * messages are one envelope (section 7). Encoding checks every rule decoding
 * checks, so what `encodeMessage` returns always decodes.
 */
import { type EnvelopeAllocator, encodeBinaryMessage, isBinaryKind } from "./binary-envelope.js";
import { canonicalJson, canonicalJsonWithin } from "./canonical-json.js";
import { invalidAt, limitAt } from "./codec.js";
import { callerFault, type ProtocolError } from "./errors.js";
import { isItemPosition } from "./fields.js";
import { LIMITS } from "./limits.js";
import type {
  BinaryMessage,
  ClientMessage,
  ClientTextMessage,
  Message,
  OutputStreamItemHead,
  ServerMessage,
  ServerTextMessage,
} from "./messages.js";
import { encodeUtf8, utf8ByteLength, utf8Text } from "./utf8.js";
import { CLIENT_TEXT_VARIANTS, OUTPUT_ITEM_HEAD_VARIANT, SERVER_TEXT_VARIANTS, type TextVariant } from "./text-messages.js";

export type TextMessage = ClientTextMessage | ServerTextMessage;

export interface EncodeOptions {
  /** Memory for a binary message's envelope (see `EnvelopeAllocator`). Default: a fresh, zeroed `Uint8Array`. */
  readonly allocate?: EnvelopeAllocator;
}

/**
 * Text variants by type. `streamCancel` exists in both directions; the
 * server's variant accepts every reason of the client's and more, so the
 * encoder uses it (the receiving decoder applies the direction's own set).
 */
const VARIANTS = new Map<string, TextVariant<TextMessage>>([
  ...CLIENT_TEXT_VARIANTS.map((variant) => [variant.type, variant] as const),
  ...SERVER_TEXT_VARIANTS.map((variant) => [variant.type, variant] as const),
]);
/** One direction's text variants: `streamCancel` with that direction's reasons. */
const CLIENT_VARIANTS = new Map<string, TextVariant<TextMessage>>(CLIENT_TEXT_VARIANTS.map((variant) => [variant.type, variant]));
const SERVER_VARIANTS = new Map<string, TextVariant<TextMessage>>(SERVER_TEXT_VARIANTS.map((variant) => [variant.type, variant]));
const CLIENT_BINARY: ReadonlySet<string> = new Set(["input-u8", "input-binary"]);
const SERVER_BINARY: ReadonlySet<string> = new Set(["output-u8", "output-binary"]);

/**
 * Encodes a text message as canonical JSON text. A message whose text would
 * exceed the 8 MiB text limit is `limit-exceeded`: every receiver would
 * refuse it, so it is refused before it is sent.
 */
export function encodeMessage(message: TextMessage): string;
/** Encodes a binary message as one envelope (a single allocation). */
export function encodeMessage(message: BinaryMessage): Uint8Array;
export function encodeMessage(message: BinaryMessage, options?: EncodeOptions): Uint8Array;
export function encodeMessage(message: Message, options?: EncodeOptions): string | Uint8Array;
export function encodeMessage(message: Message, options?: EncodeOptions): string | Uint8Array {
  return encodeWith(message, VARIANTS, undefined, "a message variant of protocol v1", options);
}

/**
 * `encodeMessage` for a client: refuses what only a server may send (its
 * messages, binary kinds, and `streamCancel` reasons such as
 * `producer-deleted`), so what it returns is what a server's
 * `decodeClientMessage` accepts.
 */
export function encodeClientMessage(message: ClientTextMessage): string;
export function encodeClientMessage(message: ClientMessage, options?: EncodeOptions): string | Uint8Array;
export function encodeClientMessage(message: ClientMessage, options?: EncodeOptions): string | Uint8Array {
  return encodeWith(message, CLIENT_VARIANTS, CLIENT_BINARY, "a message a client sends", options);
}

/** `encodeMessage` for a server: refuses what only a client may send; the result is what `decodeServerMessage` accepts. */
export function encodeServerMessage(message: ServerTextMessage): string;
export function encodeServerMessage(message: ServerMessage, options?: EncodeOptions): string | Uint8Array;
export function encodeServerMessage(message: ServerMessage, options?: EncodeOptions): string | Uint8Array {
  return encodeWith(message, SERVER_VARIANTS, SERVER_BINARY, "a message a server sends", options);
}

function encodeWith(
  message: unknown,
  variants: ReadonlyMap<string, TextVariant<TextMessage>>,
  binaryKinds: ReadonlySet<string> | undefined,
  what: string,
  options: EncodeOptions | undefined,
): string | Uint8Array {
  try {
    return encodeChecked(message, variants, binaryKinds, what, options);
  } catch (error) {
    // A getter of the caller's message that throws is the caller's bug, not a malformed message.
    throw callerFault(error);
  }
}

function encodeChecked(
  message: unknown,
  variants: ReadonlyMap<string, TextVariant<TextMessage>>,
  binaryKinds: ReadonlySet<string> | undefined,
  what: string,
  options: EncodeOptions | undefined,
): string | Uint8Array {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw invalidAt("", "to encode must be a message object");
  }
  const type: unknown = (message as { readonly type?: unknown }).type;
  if (isBinaryKind(type)) {
    if (binaryKinds !== undefined && !binaryKinds.has(type)) throw invalidAt("type", `is not ${what}`);
    return encodeBinaryMessage(message, options?.allocate);
  }
  const variant = typeof type === "string" ? variants.get(type) : undefined;
  if (variant === undefined) throw invalidAt("type", `is not ${what}`);
  const wire = variant.encode(message);
  wire["type"] = variant.type;
  wire["version"] = 1;
  // Bounded as it is written: a value referencing one object many times makes far more text than it holds.
  const text = canonicalJsonWithin(wire, 0, LIMITS.maxTextMessageBytes);
  if (text === undefined) throw tooLargeAsText();
  checkTextSize(text);
  return text;
}

/**
 * `encodeServerMessage({...head, value})` for a value that is already
 * canonical JSON: a server that keeps each output value as the canonical
 * UTF-8 text it recorded (decisions: canonical encoding) sends it without
 * parsing it back and encoding it again.
 *
 * `canonicalValue` must be the canonical UTF-8 text of a SchemaValue, exactly
 * what `canonicalJson` gives for it: it is spliced in as is. Only its outline
 * (an object whose first member is `kind`) and its UTF-8 are checked, which
 * catches a wrong buffer but proves nothing about the rest; the caller
 * vouches for it, and anything else goes through `encodeServerMessage`.
 * Every other member is checked as `encodeServerMessage` checks it, with the
 * same errors, and the 8 MiB text limit is applied to the exact byte count.
 *
 * Returns text, as `encodeServerMessage` does: a socket library encodes a
 * short string into its pooled buffers faster than a fresh byte array per
 * message can be allocated (measured on 64-byte items: a byte array per
 * message cost more than the re-encoding it saved).
 */
export function encodeOutputStreamItemWithCanonicalValue(head: OutputStreamItemHead, canonicalValue: Uint8Array): string {
  try {
    return encodeItemWithCanonicalValue(head, canonicalValue);
  } catch (error) {
    throw callerFault(error);
  }
}

function encodeItemWithCanonicalValue(head: OutputStreamItemHead, canonicalValue: Uint8Array): string {
  if (typeof head !== "object" || head === null || Array.isArray(head)) throw invalidAt("", "to encode must be a message object");
  if ((head as { readonly type?: unknown }).type !== OUTPUT_ITEM_HEAD_VARIANT.type) throw invalidAt("type", "must be outputStreamItem");
  if (!hasValueOutline(canonicalValue)) throw invalidAt("value", "must be the canonical text of a SchemaValue");
  const plain = plainItemPrefix(head);
  if (plain !== undefined) {
    checkTextBytes(plain.length + canonicalValue.length + ITEM_TAIL.length);
    return plain + utf8Text(canonicalValue, "value") + ITEM_TAIL;
  }
  const wire = OUTPUT_ITEM_HEAD_VARIANT.encode(head);
  wire["type"] = OUTPUT_ITEM_HEAD_VARIANT.type;
  // Canonical member order: channel < cursorToken < mappings < sequence < type < value < version.
  const headText = canonicalJson(wire);
  const prefix = `${headText.slice(0, -1)},"value":`;
  checkTextBytes(utf8ByteLength(prefix) + canonicalValue.length + ITEM_TAIL.length);
  return prefix + utf8Text(canonicalValue, "value") + ITEM_TAIL;
}

const ITEM_TAIL = ',"version":1}';

const HEAD_MEMBERS: ReadonlySet<string> = new Set(["type", "channel", "cursorToken", "mappings", "sequence"]);
/** Visible ASCII without the two characters JSON escapes (`"` and `\`): written into a string as they are. */
const TOKEN_NEEDING_NO_ESCAPE = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * The message's text up to its value, written out directly for the head a
 * server sends for nearly every item: no new streams, a token that needs no
 * escaping. `undefined` for any other head, which the variant table then
 * encodes (and reports, if it is bad): this only takes heads the table
 * accepts, and gives the text `canonicalJson` would (a property test holds
 * the two to each other). Measured: 1.9 µs per item through the table.
 */
function plainItemPrefix(head: OutputStreamItemHead): string | undefined {
  const { channel, cursorToken, mappings, sequence } = head;
  if (
    !isItemPosition(channel, sequence) ||
    typeof cursorToken !== "string" ||
    cursorToken.length > LIMITS.maxTokenBytes ||
    !TOKEN_NEEDING_NO_ESCAPE.test(cursorToken) ||
    !Array.isArray(mappings) ||
    mappings.length !== 0
  ) {
    return undefined;
  }
  const members = Object.keys(head);
  if (members.length !== HEAD_MEMBERS.size || !members.every((name) => HEAD_MEMBERS.has(name))) return undefined;
  return `{"channel":${channel},"cursorToken":"${cursorToken}","mappings":[],"sequence":"${sequence}","type":"outputStreamItem","value":`;
}

/** How every canonical SchemaValue begins: `kind` sorts before `value`. */
const VALUE_OPENING = encodeUtf8('{"kind":"');

function hasValueOutline(bytes: unknown): boolean {
  if (!(bytes instanceof Uint8Array) || bytes.length <= VALUE_OPENING.length || bytes[bytes.length - 1] !== 0x7d) return false;
  for (let i = 0; i < VALUE_OPENING.length; i++) if (bytes[i] !== VALUE_OPENING[i]) return false;
  return true;
}

/**
 * The receiver's first check (protocol section 12, decisions section 6),
 * applied by the sender. Counting UTF-8 bytes is needed only when the UTF-16
 * length leaves the answer open.
 */
function checkTextSize(text: string): void {
  const max = LIMITS.maxTextMessageBytes;
  if (text.length > max || (text.length * 3 > max && utf8ByteLength(text) > max)) throw tooLargeAsText();
}

/** The same check on a byte count known exactly. */
function checkTextBytes(bytes: number): void {
  if (bytes > LIMITS.maxTextMessageBytes) throw tooLargeAsText();
}

/** The error of a message too large to send as text. */
export function tooLargeAsText(): ProtocolError {
  return limitAt("", `is larger than ${LIMITS.maxTextMessageBytes} bytes as text; no receiver would accept it`);
}
