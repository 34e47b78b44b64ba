/**
 * The decoding entry points: one WebSocket message in, one typed protocol
 * message out. Each rule of protocol section 2 and of every variant's text
 * is enforced; the only error is `ProtocolError` (`invalid-message`, or
 * `limit-exceeded` for a size or count over decisions section 6).
 */
import { decodeBinaryMessage } from "./binary-envelope.js";
import { invalidAt } from "./codec.js";
import { wrongArgument } from "./errors.js";
import { type JsonObject, getMember, isJsonObject } from "./json.js";
import { LIMITS } from "./limits.js";
import type { ClientMessage, ClientTextMessage, ServerMessage, ServerTextMessage } from "./messages.js";
import { decodeCanonicalInputItem } from "./decode-input-item.js";
import { decodeCanonicalOutputItem } from "./decode-output-item.js";
import { parseStrictJson, toText } from "./strict-json.js";
import { CLIENT_TEXT_VARIANTS, SERVER_TEXT_VARIANTS, type TextVariant } from "./text-messages.js";

type Direction = "client" | "server";

/** Names a text message in errors. */
const TEXT_MESSAGE = "text message";

const CLIENT_VARIANTS = new Map(CLIENT_TEXT_VARIANTS.map((variant) => [variant.type as string, variant]));
const SERVER_VARIANTS = new Map(SERVER_TEXT_VARIANTS.map((variant) => [variant.type as string, variant]));

/**
 * Decodes a message the client sent. `data` is the complete WebSocket
 * message; `isBinary` says which frame type carried it (text frames may
 * arrive as bytes, as `ws` delivers them). A binary message's `payload` is a
 * view of `data`, not a copy. A server-to-client message is `invalid-message`.
 */
export function decodeClientMessage(data: string | Uint8Array, isBinary: boolean): ClientMessage {
  if (checkFrameType(isBinary)) return decodeBinaryMessage(data, "client") as ClientMessage;
  // Bounded and decoded once; a canonical input item (nearly every message a
  // server reads) then takes the shortcut, anything else the full decoder.
  const text = toText(data, LIMITS.maxTextMessageBytes, TEXT_MESSAGE);
  // As many bytes as characters: every byte was ASCII (any other character takes two or more).
  const asciiBytes = typeof data !== "string" && data.length === text.length ? data : undefined;
  return decodeCanonicalInputItem(text, asciiBytes) ?? decodeText(text, "client", CLIENT_VARIANTS);
}

/**
 * Decodes a message the server sent; the mirror of `decodeClientMessage`: a
 * canonical output item introducing no stream (nearly every message a
 * client reads) takes the shortcut, anything else the full decoder.
 */
export function decodeServerMessage(data: string | Uint8Array, isBinary: boolean): ServerMessage {
  if (checkFrameType(isBinary)) return decodeBinaryMessage(data, "server") as ServerMessage;
  const text = toText(data, LIMITS.maxTextMessageBytes, TEXT_MESSAGE);
  return decodeCanonicalOutputItem(text) ?? decodeText(text, "server", SERVER_VARIANTS);
}

/** `isBinary` is the caller's own argument (what its transport said of the frame), not the peer's data: a wrong type is the caller's bug. */
function checkFrameType(isBinary: unknown): boolean {
  if (typeof isBinary !== "boolean") throw wrongArgument("decodeClientMessage/decodeServerMessage", "isBinary", "a boolean");
  return isBinary;
}

function decodeText<M extends ClientTextMessage | ServerTextMessage>(
  data: unknown,
  direction: Direction,
  variants: ReadonlyMap<string, TextVariant<M>>,
): M {
  const root = parseStrictJson(data as string | Uint8Array, {
    maxBytes: LIMITS.maxTextMessageBytes,
    what: TEXT_MESSAGE,
  });
  if (!isJsonObject(root)) throw invalidAt("", "must be a JSON object");
  checkVersion(root);
  const type = getMember(root, "type");
  if (typeof type !== "string") throw invalidAt("type", "must be a string naming the message variant");
  const variant = variants.get(type);
  if (variant === undefined) {
    const [other, otherVariants] = direction === "client" ? ["server", SERVER_VARIANTS] : ["client", CLIENT_VARIANTS];
    if (otherVariants.has(type)) throw invalidAt("type", `${type} is sent by the ${other}, not the ${direction}`);
    throw invalidAt("type", "is not a message variant of protocol v1");
  }
  return variant.decode(root);
}

function checkVersion(root: JsonObject): void {
  const version = getMember(root, "version");
  if (version === undefined) throw invalidAt("version", "is required");
  if (version !== 1) throw invalidAt("version", "must be the number 1");
}
