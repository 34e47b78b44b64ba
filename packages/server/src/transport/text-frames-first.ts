/**
 * A session socket's small text messages (input items, cancels, ends) read
 * before `ws` sees them: wire's `TextFrameReader` splits each chunk the
 * socket delivers at frame boundaries, reads the whole-message text frames
 * itself, and hands `ws`'s receiver every other frame, byte for byte and in
 * order. A burst of small items then costs a view and a call per message
 * instead of `ws`'s parse of each (docs/performance.md, *Small text frames
 * read by the server*).
 *
 * How: `ws` reads its socket by writing each chunk to its receiver. That
 * receiver's `write` is wrapped here, and nothing else changes: `ws`'s own
 * socket listener stays, so what `ws` does around it (it stops reading at a
 * close frame or an error, and hands the receiver what was still buffered
 * when the socket closed) goes on as before, and frames are read here only
 * while the socket is open.
 *
 * This leans on `ws`'s private receiver (`WebSocket#_receiver`, a `Writable`
 * whose `write` takes the socket's chunks). When it is not there as expected
 * (a `ws` release that changed it), nothing is wrapped and `ws` reads every
 * frame, as before: slower, never wrong. A test checks the fast path is in
 * use with the `ws` the lockfile holds.
 */
import type { WebSocket } from "ws";
import { TextFrameReader } from "@golem-stream/wire/internal";

/** What is used of `ws`'s receiver (lib/receiver.js). */
interface WsReceiver {
  write(chunk: Buffer): boolean;
  /** Set as soon as the receiver refuses a frame (it fails the connection: nothing after that frame is read). */
  readonly errored: Error | null;
  /** Ended by a close frame: what follows it in the chunk is not read (nor by ws alone, whose parse stops there). */
  readonly writableEnded: boolean;
}

/** `ws`'s receiver, if it is as expected and has read nothing yet (so the reader starts at a frame boundary). */
function freshReceiverOf(ws: WebSocket): WsReceiver | undefined {
  const receiver: unknown = (ws as unknown as { _receiver?: unknown })._receiver;
  if (typeof receiver !== "object" || receiver === null) return undefined;
  const fields = receiver as Record<string, unknown>;
  // `_state` 0 is GET_INFO: the receiver waits for a frame's first byte, with nothing buffered.
  const fresh = typeof fields.write === "function" && fields.errored === null && fields._state === 0 && fields._bufferedBytes === 0;
  return fresh ? (receiver as WsReceiver) : undefined;
}

/**
 * Reads `ws`'s whole-message text frames of at most `maxPayloadBytes` here
 * and hands each payload to `onText`, in order with the messages `ws` emits.
 * Call it at once after the upgrade, before the socket delivers anything.
 * Returns false when `ws`'s receiver is not as expected: then nothing
 * changed, and every message comes through `ws`'s `message` event.
 */
export function readTextFramesFirst(ws: WebSocket, maxPayloadBytes: number, onText: (payload: Uint8Array) => void): boolean {
  const receiver = freshReceiverOf(ws);
  if (receiver === undefined) return false;
  const writeToWs = receiver.write.bind(receiver);
  // What ws's last write said: false asks its caller (ws's socket listener) to stop reading until the receiver drains.
  let flowing = true;
  const reader = new TextFrameReader<Buffer>({
    maxPayloadBytes,
    text: onText,
    other: (chunk, start, end) => {
      if (receiver.writableEnded) return;
      flowing = writeToWs(start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end));
    },
    // Not after a close frame (ws is closing) or a frame ws refused (it fails the connection; the error event comes a tick later).
    open: () => ws.readyState === ws.OPEN && receiver.errored === null,
  });
  receiver.write = (chunk: Buffer): boolean => {
    flowing = true;
    reader.read(chunk);
    return flowing;
  };
  return true;
}
