/**
 * Bytes of messages that session sockets are still receiving, all sockets
 * together, against `limits.maxReceivingBytesPerNode`.
 *
 * The node's byte budget (invocation/node-budget.ts) counts a message once it
 * is whole. Before that, `ws` keeps its frames itself: a frame whose header
 * announced 16 MiB, or the fragments of a message, stay in its receiver for
 * as long as the rest does not come, up to `maxPayload` per socket. A token
 * holder opening its `maxConnectionsPerPrincipal` sockets and starting a
 * large message on each, never finishing them (fragments let it answer pings
 * between them), held that times 16 MiB: 16 GiB with the defaults.
 *
 * A message counts from each frame's header at the length the header
 * announces (what the socket will hold once the frame arrives), plus what the
 * receiver buffers before a header is read. Past the limit, the socket
 * receiving the most is closed at once, with 1013 (try again later) written
 * before it goes: its client reconnects and resumes, sending again what was
 * not acknowledged; a socket that only sends small messages is never the one.
 *
 * This reads `ws`'s private receiver, as the frame reader does
 * (`readWsTextFramesFirst`); when it is not there as expected, `watch` says
 * so and nothing is counted for that socket (a `ws` release that changed it:
 * the transport tests check the count is in use with the `ws` the lockfile
 * holds).
 */
import type { WebSocket } from "ws";

/** The close status for a server that cannot take this now (RFC 6455 registry: Try Again Later). */
export const CLOSE_TRY_AGAIN_LATER = 1013;

/** `ws`'s receiver state while it reads a frame's payload (`lib/receiver.js`, `GET_DATA`). */
const GET_DATA = 4;

/** What is read of `ws`'s receiver. */
interface ReceiverFields {
  write(chunk: Uint8Array): boolean;
  /** Data frames of the message under way, each at its announced length, the one being read included. */
  readonly _totalPayloadLength: number;
  /** Bytes received and not yet consumed. */
  readonly _bufferedBytes: number;
  readonly _state: number;
  /** Set as it refuses a frame (an oversized one included, after counting its announced length). */
  readonly _errored: boolean;
}

export class ReceivingBytes {
  readonly #limit: number;
  readonly #over: (bytes: number) => void;
  /** Sockets receiving a message now, and how many bytes each counts. */
  readonly #receiving = new Map<WebSocket, number>();
  #total = 0;

  /** `over` is told of each socket closed for the limit (a log line). */
  constructor(limit: number, over: (bytes: number) => void) {
    this.#limit = limit;
    this.#over = over;
  }

  /**
   * Counts what `socket` receives, after each chunk it reads, until it
   * closes. Call once, after anything else that wraps its receiver's `write`.
   * False when the receiver is not as expected: nothing is counted then.
   */
  watch(socket: WebSocket): boolean {
    const receiver = (socket as unknown as { _receiver?: unknown })._receiver;
    if (!isReceiver(receiver)) return false;
    const write = receiver.write.bind(receiver);
    receiver.write = (chunk: Uint8Array): boolean => {
      const flowing = write(chunk);
      this.#update(socket, receivingBytes(receiver));
      return flowing;
    };
    socket.once("close", () => this.#update(socket, 0));
    return true;
  }

  #update(socket: WebSocket, bytes: number): void {
    const before = this.#receiving.get(socket) ?? 0;
    if (bytes === before) return;
    this.#total += bytes - before;
    if (bytes === 0) this.#receiving.delete(socket);
    else this.#receiving.set(socket, bytes);
    if (this.#total > this.#limit) this.#closeLargest();
  }

  /** Closes the socket receiving the most; only past the limit, so the scan is rare. */
  #closeLargest(): void {
    let largest: WebSocket | undefined;
    let most = 0;
    for (const [socket, bytes] of this.#receiving) {
      if (bytes > most) {
        largest = socket;
        most = bytes;
      }
    }
    if (largest === undefined) return;
    this.#receiving.delete(largest);
    this.#total -= most;
    this.#over(most);
    // The close frame goes before the socket does; nothing more is read from it, so what its
    // receiver held is garbage at once rather than after a close handshake it may never answer.
    largest.close(CLOSE_TRY_AGAIN_LATER, "overloaded");
    largest.terminate();
  }
}

function isReceiver(value: unknown): value is ReceiverFields {
  if (typeof value !== "object" || value === null) return false;
  const fields = value as Record<string, unknown>;
  return (
    typeof fields.write === "function" &&
    typeof fields._totalPayloadLength === "number" &&
    typeof fields._bufferedBytes === "number" &&
    typeof fields._state === "number" &&
    typeof fields._errored === "boolean"
  );
}

/**
 * The message under way at its frames' announced lengths, and bytes buffered before a header is
 * read; nothing once the receiver refused a frame: it fails the connection itself (an oversized
 * frame with 1009, whose announced length it had already added), and reads nothing more.
 */
function receivingBytes(receiver: ReceiverFields): number {
  if (receiver._errored) return 0;
  return receiver._totalPayloadLength + (receiver._state === GET_DATA ? 0 : receiver._bufferedBytes);
}
