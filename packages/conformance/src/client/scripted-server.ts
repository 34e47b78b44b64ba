/**
 * The reference side of the client suite: a WebSocket server on loopback
 * that speaks the protocol with the wire codec of `@golem-stream/wire` and
 * nothing else. It keeps no session logic of its own: each scenario scripts
 * every connection (what to answer, where to cut, what to resend), and the
 * server records what the client sent on each.
 */
import { WebSocketServer, type WebSocket } from "ws";
import { SUBPROTOCOL, decodeClientMessage, encodeServerMessage, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import { Mismatch } from "../check.js";
import { releaseOnAbort } from "../lifetime.js";

export interface ScriptedPeer {
  /** 1 for the first connection. */
  readonly index: number;
  /** Every message the client sent on this connection, in order (decoded strictly). */
  readonly received: ClientMessage[];
  /** The next message not yet taken; fails after `timeoutMs` of silence or when the connection closes first. */
  next(what: string): Promise<ClientMessage>;
  /** The next message of a type, skipping others (kept in `received`). */
  nextOf<T extends ClientMessage["type"]>(type: T, what?: string): Promise<Extract<ClientMessage, { type: T }>>;
  send(message: ServerMessage): void;
  /** Bytes the codec would refuse: text or binary, sent as they are. */
  sendRaw(data: string | Uint8Array): void;
  /** A close handshake with this code. */
  close(code?: number): void;
  /** The connection vanishes (TCP reset, no close frame): a cut. */
  cut(): void;
  readonly closed: Promise<void>;
  readonly isClosed: boolean;
  /** Bytes sent that are still waiting in this process for the socket to take them: it grows while the client does not read. */
  readonly bufferedAmount: number;
}

export type Script = (peer: ScriptedPeer) => Promise<void> | void;

/** What the client offered in one WebSocket upgrade request. */
export interface UpgradeRequest {
  /** 1 for the first upgrade, refused or not. */
  readonly index: number;
  /** `Sec-WebSocket-Protocol` entries, in order. */
  readonly protocols: readonly string[];
  readonly authorization: string | undefined;
}

/** An HTTP refusal of an upgrade, with Golem's error envelope as its body (decisions §5). */
export interface Refusal {
  readonly status: number;
  readonly body: { readonly code: string; readonly error: string };
}

export class ScriptedServer {
  readonly peers: ScriptedPeer[] = [];
  /** Every upgrade request, accepted or refused. */
  readonly upgrades: UpgradeRequest[] = [];
  /** Failures of the script or of decoding a client message: the scenario fails with them. */
  readonly problems: string[] = [];
  readonly #wss: WebSocketServer;
  readonly #timeoutMs: number;
  #script: Script = () => undefined;
  #refuse: (upgrade: UpgradeRequest) => Refusal | undefined = () => undefined;
  readonly #waiters = new Set<() => void>();
  #closing: Promise<void> | undefined;

  private constructor(wss: WebSocketServer, timeoutMs: number) {
    this.#wss = wss;
    this.#timeoutMs = timeoutMs;
    wss.on("connection", (socket: WebSocket) => {
      const peer = this.#peerOf(socket, this.peers.length + 1);
      this.peers.push(peer);
      for (const wake of this.#waiters) wake();
      void Promise.resolve()
        .then(() => this.#script(peer))
        .catch((error: unknown) => {
          this.problems.push(`connection ${peer.index}: ${error instanceof Error ? error.message : String(error)}`);
          socket.terminate();
        });
    });
  }

  /** Listens on a free loopback port; `signal` closes the server when it aborts, even before it listens. */
  static async start(timeoutMs: number, signal?: AbortSignal): Promise<ScriptedServer> {
    signal?.throwIfAborted();
    let server: ScriptedServer | undefined;
    const wss = new WebSocketServer({
      port: 0,
      host: "127.0.0.1",
      perMessageDeflate: false,
      handleProtocols: (set) => (set.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
      verifyClient: (info, callback) => {
        const header = info.req.headers["sec-websocket-protocol"];
        const upgrade: UpgradeRequest = {
          index: (server?.upgrades.length ?? 0) + 1,
          protocols: (header ?? "")
            .split(",")
            .map((p) => p.trim())
            .filter((p) => p !== ""),
          authorization: info.req.headers.authorization,
        };
        server?.upgrades.push(upgrade);
        const refusal = server === undefined ? undefined : server.#refuse(upgrade);
        if (refusal === undefined) callback(true);
        else callback(false, refusal.status, JSON.stringify(refusal.body), { "Content-Type": "application/json" });
      },
    });
    server = new ScriptedServer(wss, timeoutMs);
    const started = server;
    wss.once(
      "close",
      releaseOnAbort(signal, () => void started.close()),
    );
    await new Promise((resolve, reject) => {
      wss.once("listening", resolve);
      wss.once("error", reject);
      wss.once("close", () =>
        reject(signal?.aborted === true ? signal.reason : new Error("the scripted server closed before it listened")),
      );
    });
    return server;
  }

  /** Which upgrades to refuse, and how (default: none). */
  refuseUpgrades(decide: (upgrade: UpgradeRequest) => Refusal | undefined): void {
    this.#refuse = decide;
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.#wss.address() as { port: number }).port}`;
  }

  /** How every connection from now on is served. */
  serve(script: Script): void {
    this.#script = script;
  }

  /** Resolves once the client has opened `count` connections. */
  async connections(count: number, what: string): Promise<void> {
    await this.#until(() => this.peers.length >= count, `${what}: the client opened ${this.peers.length} connection(s), expected ${count}`);
  }

  async #until(condition: () => boolean, failure: string): Promise<void> {
    if (condition()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Mismatch(failure));
      }, this.#timeoutMs);
      const check = () => {
        const met = condition();
        if (!met && this.#closing === undefined) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        if (met) resolve();
        else reject(new Mismatch(`${failure} (the scripted server closed)`));
      };
      this.#waiters.add(check);
    });
  }

  /** Terminates every connection and stops listening; waits on the server end at once. Idempotent. */
  async close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      for (const client of this.#wss.clients) client.terminate();
      this.#wss.close(() => resolve());
      for (const wake of [...this.#waiters]) wake();
    });
    await this.#closing;
  }

  #peerOf(socket: WebSocket, index: number): ScriptedPeer {
    const received: ClientMessage[] = [];
    let taken = 0;
    let wake: (() => void) | undefined;
    let isClosed = false;
    const problems = this.problems;
    socket.on("message", (data, isBinary) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? Buffer.from(data) : data;
      try {
        received.push(decodeClientMessage(isBinary ? bytes : bytes.toString("utf8"), isBinary));
      } catch (error) {
        problems.push(
          `connection ${index}: the client sent a message the codec refuses: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      wake?.();
    });
    socket.on("error", () => undefined);
    const closed = new Promise<void>((resolve) =>
      socket.once("close", () => {
        isClosed = true;
        wake?.();
        resolve();
      }),
    );
    const timeoutMs = this.#timeoutMs;
    const next = async (what: string): Promise<ClientMessage> => {
      const deadline = Date.now() + timeoutMs;
      while (taken >= received.length) {
        if (isClosed) throw new Mismatch(`connection ${index} closed before ${what}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Mismatch(`connection ${index}: did not see ${what} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      return received[taken++]!;
    };
    return {
      index,
      received,
      next,
      async nextOf(type, what = type) {
        for (;;) {
          const message = await next(what);
          if (message.type === type) return message as never;
        }
      },
      send(message) {
        if (socket.readyState === socket.OPEN) socket.send(encodeServerMessage(message));
      },
      sendRaw(data) {
        if (socket.readyState === socket.OPEN) socket.send(data, { binary: typeof data !== "string" });
      },
      close(code = 1000) {
        socket.close(code);
      },
      cut() {
        socket.terminate();
      },
      closed,
      get isClosed() {
        return isClosed;
      },
      get bufferedAmount() {
        return socket.bufferedAmount;
      },
    };
  }
}
