/**
 * A TCP proxy for loopback tests in which the server's answers get lost: on
 * a muted connection the client's bytes reach the server and the server's
 * `101` reaches the client, but nothing after it — no message, no close
 * frame, no FIN — so the client holds a sent start whose outcome it cannot
 * know. The server's side goes on as if the client heard it (the proxy reads
 * everything it sends). A muted connection stays open until `cutMuted()`
 * resets it; unmuted connections are relayed untouched.
 *
 * Both directions of every connection are decoded, so a test can read what
 * the client sent (was a retry the exact start?) and what the server
 * answered, including answers the client never got (its session token).
 * The relaying is test-support's TCP proxy (`holdAnswers` for a muted connection); this
 * file adds the decoding.
 */
import { startTcpProxy } from "@golem-stream/test-support";
import { decodeClientMessage, decodeServerMessage, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import { WsFrameReader, type WsMessage } from "./ws-frames.js";

export interface ProxiedConnection {
  readonly muted: boolean;
  /** What the client sent, decoded, in order. */
  readonly sent: readonly ClientMessage[];
  /** What the server sent, decoded, in order — relayed or, when muted, kept from the client. */
  readonly answered: readonly ServerMessage[];
  /** Both sides of the connection are closed. */
  readonly closed: boolean;
}

export interface MutingProxy {
  /** `ws://127.0.0.1:<port>` pointing at the upstream. */
  readonly url: string;
  /** Every connection accepted so far, in order. */
  readonly connections: readonly ProxiedConnection[];
  /** Resolves once `predicate()` holds, re-checked whenever the proxy sees traffic. */
  until(predicate: () => boolean): Promise<void>;
  /** Resets both sides of every muted connection still open: the client's request was lost in flight. */
  cutMuted(): void;
  /** Resolves once no relayed socket is open (every connection ended on both sides). */
  idle(): Promise<void>;
  /** Closes everything; rejects if some bytes could not be decoded as protocol messages. */
  close(): Promise<void>;
}

/** `mute(index)` decides, when connection `index` (0-based) is accepted, whether it is muted. */
export async function startMutingProxy(upstreamUrl: string, mute: (index: number) => boolean): Promise<MutingProxy> {
  const undecodable: unknown[] = [];
  const proxy = await startTcpProxy({ upstream: upstreamUrl, plan: ({ index }) => (mute(index) ? { holdAnswers: true } : undefined) });
  const decoded: { sent: ClientMessage[]; answered: ServerMessage[]; fromClient: UpgradedReader; fromServer: UpgradedReader }[] = [];
  proxy.tap((connection, from, chunk) => {
    let readers = decoded[connection.index];
    if (readers === undefined) {
      const sent: ClientMessage[] = [];
      const answered: ServerMessage[] = [];
      readers = {
        sent,
        answered,
        fromClient: new UpgradedReader((message) => sent.push(decodeClientMessage(message.data, message.binary)), undecodable),
        fromServer: new UpgradedReader((message) => answered.push(decodeServerMessage(message.data, message.binary)), undecodable),
      };
      decoded[connection.index] = readers;
    }
    (from === "client" ? readers.fromClient : readers.fromServer).push(chunk);
  });
  const connections = (): ProxiedConnection[] =>
    proxy.connections.map((connection) => ({
      muted: connection.plan.holdAnswers === true,
      sent: decoded[connection.index]?.sent ?? [],
      answered: decoded[connection.index]?.answered ?? [],
      closed: connection.closed,
    }));
  return {
    url: proxy.url,
    get connections() {
      return connections();
    },
    until: (predicate) => proxy.until(predicate),
    cutMuted: () => proxy.cutOpen((connection) => connection.plan.holdAnswers === true),
    idle: () => proxy.idle(),
    close: async () => {
      await proxy.close();
      if (undecodable.length > 0) throw new AggregateError(undecodable, "the proxy saw undecodable messages");
    },
  };
}

/**
 * One direction of a connection: the HTTP upgrade head up to its blank line,
 * then WebSocket messages, each handed to `onMessage`. A decoding failure is
 * recorded, not thrown: it belongs to the test, not to a socket callback.
 */
class UpgradedReader {
  readonly #onMessage: (message: WsMessage) => void;
  readonly #failures: unknown[];
  readonly #frames = new WsFrameReader();
  #head: Buffer | undefined = Buffer.alloc(0);
  /** False after a refused upgrade: what follows the head is an HTTP body, not frames. */
  #framesFollow = true;

  constructor(onMessage: (message: WsMessage) => void, failures: unknown[]) {
    this.#onMessage = onMessage;
    this.#failures = failures;
  }

  push(chunk: Buffer): void {
    let rest: Buffer = chunk;
    if (this.#head !== undefined) {
      const seen = Buffer.concat([this.#head, chunk]);
      const end = seen.indexOf("\r\n\r\n");
      if (end < 0) {
        this.#head = seen;
        return;
      }
      const headLength = end + 4 - this.#head.length;
      const firstLine = seen.subarray(0, seen.indexOf("\r\n")).toString("latin1");
      this.#framesFollow = firstLine.startsWith("GET ") || / 101 /.test(firstLine);
      this.#head = undefined;
      rest = chunk.subarray(headLength);
    }
    if (!this.#framesFollow) return;
    try {
      for (const message of this.#frames.push(rest)) this.#onMessage(message);
    } catch (error) {
      this.#failures.push(error);
    }
  }
}
