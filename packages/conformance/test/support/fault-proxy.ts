/**
 * A WebSocket proxy between the suite and the project's server that breaks
 * one protocol rule at a time: it can rewrite, drop, duplicate, reorder or
 * delay frames in either direction, and misbehave in the HTTP handshake.
 * With no fault it is transparent (the control run proves that), so every
 * check that fails through it fails because of the fault. WebSocket pings
 * and pongs are relayed too (neither side answers them itself), so the
 * server's pings reach the client and only the client's pongs answer them.
 */
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";
import WebSocket, { WebSocketServer } from "ws";
import {
  decodeClientMessage,
  decodeServerMessage,
  encodeMessage,
  SESSION_PATH,
  SUBPROTOCOL,
  type ClientMessage,
  type ServerMessage,
} from "@golem-stream/wire";

/** A frame to send: a typed message (encoded by the proxy) or raw bytes. */
export type Out<M> = M | { readonly raw: string | Buffer; readonly binary: boolean };

/** State shared by every connection through one proxy (tokens issued, cursors seen). */
export interface ProxyState {
  readonly sessionTokens: Set<string>;
  lastSessionToken: string | undefined;
  /** Cursor → the cursor of the item before it on the same stream. */
  readonly previousCursor: Map<string, string>;
  /** Free-form per-fault memory. */
  readonly memo: Map<string, unknown>;
}

/** Per-connection state. */
export interface Link {
  readonly state: ProxyState;
  /** Text messages already sent to the client on this connection. */
  readonly toClientLog: ServerMessage[];
  /** Sends a frame to the client now, ahead of the message being handled. */
  sendToClient(message: Out<ServerMessage>): void;
  /** Sends a frame to the server now (dropped once the server connection is gone). */
  sendToServer(message: Out<ClientMessage>): void;
  /** Closes the client's connection with `code` (after what was already queued) and drops the server's. */
  closeClient(code: number): void;
  /** Bytes sent to the client and not yet written to its socket. */
  clientBacklog(): number;
  /** Whether the client has sent any message on this connection. */
  clientSpoke(): boolean;
  readonly memo: Map<string, unknown>;
}

export interface Fault {
  readonly name: string;
  readonly description: string;
  /** Upgrade with the valid token whatever the client sent. */
  readonly acceptAnyToken?: boolean;
  /** Rewrites the client's `Authorization` header for the upgrade to the server (after `acceptAnyToken`). */
  readonly authorization?: (header: string | undefined) => string | undefined;
  /** Accept upgrades that offer no or only unsupported subprotocols. */
  readonly acceptAnySubprotocol?: boolean;
  /** Choose the subprotocol answered to the client from what it offered. */
  readonly selectProtocol?: (offered: readonly string[]) => string;
  /** Negotiate permessage-deflate with the client. */
  readonly compression?: boolean;
  /** Rewrite the HTTP error response of a refused upgrade or plain request. */
  readonly httpError?: (status: number, body: string) => { status: number; body: string };
  /** Server → client. Returns the frames to send instead (empty: drop). */
  readonly toClient?: (message: ServerMessage, link: Link) => Out<ServerMessage>[] | Promise<Out<ServerMessage>[]>;
  /** Client → server, for frames the strict decoder accepts. */
  readonly toServer?: (message: ClientMessage, link: Link) => Out<ClientMessage>[] | Promise<Out<ClientMessage>[]>;
  /** Client → server, for frames the strict decoder refuses. Default: forward unchanged. */
  readonly undecodableToServer?: (data: Buffer, binary: boolean) => Out<ClientMessage>[];
  /** Frames sent to the server when the client's transport goes away, before the server's is closed. */
  readonly onClientClose?: (link: Link) => Out<ClientMessage>[];
  /** The close code relayed to the client when the server closes with `code`. */
  readonly closeCode?: (code: number, link: Link) => number;
  /** Runs once the client's connection is linked to the server's, before any frame. */
  readonly onLinked?: (link: Link) => void;
  /** The server's close of a connection whose client said nothing is not relayed: the client stays connected. */
  readonly keepSilentClientsOpen?: boolean;
  /** The client's pongs are not relayed: the server sees a peer that answers no ping. */
  readonly dropPongs?: boolean;
  /** The proxy answers the server's pings itself and does not relay them: the client sees none. */
  readonly answerPings?: boolean;
  /** An upgrade the server refuses is accepted for the client all the same (left open, with no server behind it). */
  readonly acceptRefusedUpgrades?: boolean;
}

export const NO_FAULT: Fault = { name: "none", description: "transparent" };

export interface FaultProxy {
  readonly url: string;
  /** Errors inside the proxy (a fault that throws, a frame that cannot be encoded): must stay empty in a control run. */
  readonly errors: unknown[];
  close(): Promise<void>;
}

/** Close codes an endpoint may send in a close frame. */
function sendable(code: number): boolean {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

function encodeOut<M extends ServerMessage | ClientMessage>(out: Out<M>): { data: string | Buffer; binary: boolean } {
  if (typeof out === "object" && out !== null && "raw" in out) return { data: out.raw, binary: out.binary };
  try {
    const data = encodeMessage(out as never);
    return typeof data === "string" ? { data, binary: false } : { data: Buffer.from(data), binary: true };
  } catch (error) {
    // A fault may build a message the strict encoder refuses (that is the point of some faults):
    // text messages are then written as plain JSON, u64 values as decimal strings.
    if (BINARY_TYPES.has(out.type)) throw error;
    return {
      data: JSON.stringify({ version: 1, ...out }, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value)),
      binary: false,
    };
  }
}

const BINARY_TYPES = new Set(["input-u8", "input-binary", "output-u8", "output-binary"]);

function offeredProtocols(req: IncomingMessage): string[] {
  const header = req.headers["sec-websocket-protocol"];
  return typeof header === "string"
    ? header
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p.length > 0)
    : [];
}

function writeHttp(socket: Duplex, status: number, body: string): void {
  socket.end(
    `HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Serialises async work per direction so that frames keep their order; a failure is reported, not thrown. */
class Lane {
  #tail: Promise<void> = Promise.resolve();
  constructor(private readonly onError: (error: unknown) => void) {}
  run(work: () => Promise<void>): void {
    this.#tail = this.#tail.then(work).catch(this.onError);
  }
  get idle(): Promise<void> {
    return this.#tail;
  }
}

export async function startFaultProxy(upstreamUrl: string, validToken: string, fault: Fault): Promise<FaultProxy> {
  const state: ProxyState = { sessionTokens: new Set(), lastSessionToken: undefined, previousCursor: new Map(), memo: new Map() };
  const sockets = new Set<WebSocket>();
  const errors: unknown[] = [];
  const report = (error: unknown): void => void errors.push(error);
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: fault.compression === true,
    // Invalid UTF-8 must reach the server, whose answer the suite judges.
    skipUTF8Validation: true,
    maxPayload: 64 * 1024 * 1024,
    autoPong: false,
    handleProtocols: (offered) => {
      const list = [...offered];
      if (fault.selectProtocol !== undefined) return fault.selectProtocol(list);
      return list.includes(SUBPROTOCOL) ? SUBPROTOCOL : (list[0] ?? false);
    },
  });

  const server: Server = createServer((req, res) => {
    // Plain HTTP (no upgrade): forwarded, with the error rewritten if the fault says so.
    const upstream = request(
      new URL(req.url ?? "/", upstreamUrl.replace(/^ws/, "http")),
      { method: req.method, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on("data", (c: Buffer) => chunks.push(c));
        answer.on("end", () => {
          let status = answer.statusCode ?? 502;
          let body = Buffer.concat(chunks).toString("utf8");
          if (fault.httpError !== undefined && status >= 400) ({ status, body } = fault.httpError(status, body));
          res.writeHead(status, { "content-type": "application/json" }).end(body);
        });
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const offered = offeredProtocols(req);
    const upstreamProtocols = fault.acceptAnySubprotocol === true ? [SUBPROTOCOL] : offered;
    const presented = fault.acceptAnyToken === true ? `Bearer ${validToken}` : req.headers.authorization;
    const authorization = fault.authorization === undefined ? presented : fault.authorization(presented);
    const headers: Record<string, string> = {};
    if (authorization !== undefined) headers.authorization = authorization;
    const upstream = new WebSocket(`${upstreamUrl}${req.url ?? SESSION_PATH}`, upstreamProtocols, {
      headers,
      perMessageDeflate: false,
      maxPayload: 64 * 1024 * 1024,
      skipUTF8Validation: true,
      autoPong: false,
    });
    upstream.binaryType = "nodebuffer";
    upstream.on("error", () => socket.destroy());
    upstream.on("unexpected-response", (_r, res) => {
      if (fault.acceptRefusedUpgrades === true) {
        res.resume();
        wss.handleUpgrade(req, socket, head, (client) => void sockets.add(client));
        return;
      }
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        let status = res.statusCode ?? 502;
        let body = Buffer.concat(chunks).toString("utf8");
        if (fault.httpError !== undefined) ({ status, body } = fault.httpError(status, body));
        writeHttp(socket, status, body);
      });
    });
    upstream.on("open", () => {
      const pending: { data: Buffer; binary: boolean }[] = [];
      const early = (data: Buffer, binary: boolean): void => void pending.push({ data, binary });
      upstream.on("message", early);
      wss.handleUpgrade(req, socket, head, (client) => {
        upstream.off("message", early);
        link(client, upstream, pending);
      });
    });
  });

  function link(client: WebSocket, upstream: WebSocket, early: { data: Buffer; binary: boolean }[]): void {
    sockets.add(client);
    sockets.add(upstream);
    const toClientLane = new Lane(report);
    const toServerLane = new Lane(report);
    let clientBuffered = 0;
    const sendClient = (out: Out<ServerMessage>): void => {
      if (client.readyState !== WebSocket.OPEN) return;
      const { data, binary } = encodeOut(out);
      // Text messages only: binary payloads would keep every blob of a long stream alive.
      if (!(typeof out === "object" && "raw" in out) && !BINARY_TYPES.has(out.type)) connection.toClientLog.push(out);
      // Mirror the client's backpressure to the server: stop reading it while the client is behind.
      const size = typeof data === "string" ? Buffer.byteLength(data) : data.length;
      clientBuffered += size;
      if (clientBuffered > 4 * 1024 * 1024) upstream.pause();
      client.send(data, { binary }, () => {
        clientBuffered -= size;
        if (clientBuffered <= 1024 * 1024) upstream.resume();
      });
    };
    const sendServer = (out: Out<ClientMessage>): void => {
      if (upstream.readyState !== WebSocket.OPEN) return;
      const { data, binary } = encodeOut(out);
      upstream.send(data, { binary });
    };
    const closeClient = (code: number): void => {
      client.close(code);
      upstream.terminate();
    };
    let clientSpoke = false;
    const connection: Link = {
      state,
      toClientLog: [],
      sendToClient: sendClient,
      sendToServer: sendServer,
      closeClient,
      clientBacklog: () => clientBuffered,
      clientSpoke: () => clientSpoke,
      memo: new Map(),
    };

    // Pings and pongs, relayed both ways (see the file comment).
    upstream.on("ping", (data: Buffer) => {
      if (fault.answerPings === true) upstream.pong(data);
      else if (client.readyState === WebSocket.OPEN) client.ping(data);
    });
    client.on("pong", (data: Buffer) => {
      if (fault.dropPongs !== true && upstream.readyState === WebSocket.OPEN) upstream.pong(data);
    });
    client.on("ping", (data: Buffer) => {
      if (upstream.readyState === WebSocket.OPEN) upstream.ping(data);
    });
    upstream.on("pong", (data: Buffer) => {
      if (client.readyState === WebSocket.OPEN) client.pong(data);
    });
    fault.onLinked?.(connection);

    const fromServer = (data: Buffer, binary: boolean): void => {
      toClientLane.run(async () => {
        let message: ServerMessage;
        try {
          message = decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), binary);
        } catch {
          sendClient({ raw: data, binary });
          return;
        }
        if (message.type === "invocationAccepted") {
          state.sessionTokens.add(message.sessionToken);
          state.lastSessionToken = message.sessionToken;
        }
        if (message.type === "outputStreamItem" || message.type === "output-u8" || message.type === "output-binary") {
          const key = `last-cursor-${message.channel}`;
          const previous = connection.memo.get(key) as string | undefined;
          if (previous !== undefined) state.previousCursor.set(message.cursorToken, previous);
          connection.memo.set(key, message.cursorToken);
        }
        const outs = fault.toClient === undefined ? [message] : await fault.toClient(message, connection);
        for (const out of outs) sendClient(out);
      });
    };
    for (const { data, binary } of early) fromServer(data, binary);
    upstream.on("message", (data: Buffer, binary: boolean) => fromServer(data, binary));

    client.on("message", (data: Buffer, binary: boolean) => {
      clientSpoke = true;
      toServerLane.run(async () => {
        let outs: Out<ClientMessage>[];
        try {
          const message = decodeClientMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), binary);
          outs = fault.toServer === undefined ? [message] : await fault.toServer(message, connection);
        } catch {
          outs = fault.undecodableToServer === undefined ? [{ raw: data, binary }] : fault.undecodableToServer(data, binary);
        }
        for (const out of outs) sendServer(out);
      });
    });

    upstream.on("close", (code, reason) => {
      if (fault.keepSilentClientsOpen === true && !clientSpoke) return;
      toClientLane.run(async () => {
        const relayed = fault.closeCode === undefined ? code : fault.closeCode(code, connection);
        if (sendable(relayed)) client.close(relayed, reason);
        else client.terminate();
      });
    });
    client.on("close", (code) => {
      if (upstream.readyState === WebSocket.OPEN) {
        for (const out of fault.onClientClose?.(connection) ?? []) sendServer(out);
        if (sendable(code)) upstream.close(code);
        else upstream.terminate();
      } else if (upstream.readyState === WebSocket.CONNECTING) upstream.terminate();
    });
    client.on("error", () => upstream.terminate());
    upstream.on("error", () => client.terminate());
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  return {
    url: `ws://127.0.0.1:${address.port}`,
    errors,
    async close() {
      for (const socket of sockets) socket.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
