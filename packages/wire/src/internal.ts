/**
 * @golem-stream/wire/internal — the fast paths the other golem-stream
 * packages build their hot loops on: an input item written from its
 * pre-encoded head and tail, an output item sent with the canonical text the
 * store already holds, the canonical text (or bytes) of a string node the
 * decoder just read and whether its message was ASCII, the shape of a string node an
 * encoder may write without its walk, and the WebSocket frames of a burst of
 * small text messages, written into one buffer, and a client's small text
 * frames read from a server's socket before a general receiver sees them; a TLS failure read out
 * of the error Node reports it with, and a TLS port's refusal of a plain HTTP request; a stream
 * or cursor token's public fields read without verifying it (and without the tokens package). Each keeps the rules of the checked
 * codec it stands in for (tests compare the two on random inputs), but each
 * asks its caller to keep a precondition the main entry's functions check for
 * themselves.
 *
 * For the workspace's own packages: no compatibility promise beyond the
 * version they are released with. Applications use the main entry.
 */
export { encodeOutputStreamItemWithCanonicalValue } from "./encode.js";
export { encodeInputStreamItemValue, inputStreamItemHead, isInputItemPosition, INPUT_ITEM_TAIL } from "./encode-input-item.js";
export { canonicalStringNodeBytes, canonicalStringNodeText, isAsciiStringNodeText } from "./string-node-text.js";
export { isPlainStringNode } from "./canonical-json.js";
export { isMimeType } from "./fields.js";
export { TextFrameBurst, type TextFrameBurstOptions } from "./websocket-text-frames.js";
export {
  TextFrameReader,
  readTextFramesBefore,
  readWsTextFramesFirst,
  type FrameReceiver,
  type ReadTextFramesBeforeOptions,
  type TextFrameReaderOptions,
  type WsSocketState,
} from "./websocket-frame-reader.js";
export { tlsErrorOf, type TlsError } from "./tls-error.js";
export { isPlainHttpOnTlsRefusal, PLAIN_HTTP_ON_TLS_CODE } from "./plain-http-on-tls.js";
export { isTerminalCursor, itemCursorPosition, streamIdentityOf } from "./token-peek.js";
