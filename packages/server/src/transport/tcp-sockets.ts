/**
 * The TCP socket under each connection of a TLS listener. Its bounds
 * (`ConnectionGate`, `ProbeReserve`) count a connection from its TCP accept,
 * before any handshake, so that connections stuck in their handshake are
 * bounded as plain ones stuck in their request head are. The requests and
 * upgrades that follow arrive on the TLS socket wrapping it: this finds the
 * TCP socket again from the TLS one, by the connection's addresses and
 * ports, which no two open connections of one listener share. Node's TLS
 * server does not document which socket it wrapped: its TLS sockets keep it
 * as `_parent` (seen on Node 20), an internal property that any release may
 * change without notice, where the addresses and ports are documented
 * `net.Socket` properties, read while both sockets are open (a socket's
 * addresses are unknown only once it closed, and then there is nothing
 * left to count).
 *
 * The sockets still in their handshake are also the ones `close` must
 * destroy itself: Node's `closeAllConnections` knows only the connections
 * that have an HTTP parser, which over TLS is once the handshake completed.
 */
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

type Addressed = Pick<Socket, "localAddress" | "localPort" | "remoteAddress" | "remotePort">;

export class TcpSockets {
  /** Accepted sockets whose TLS handshake has not completed, by their four-tuple. */
  readonly #handshaking = new Map<string, Socket>();
  /** The TCP socket under each TLS socket whose handshake completed. */
  readonly #under = new WeakMap<Duplex, Socket>();
  /** The TLS socket over each TCP socket whose handshake completed. */
  readonly #over = new WeakMap<Socket, Duplex>();

  /** A TCP connection was accepted: its TLS socket is looked for when its handshake completes. */
  accepted(socket: Socket): void {
    const key = fourTuple(socket);
    this.#handshaking.set(key, socket);
    socket.once("close", () => {
      if (this.#handshaking.get(key) === socket) this.#handshaking.delete(key);
    });
  }

  /** `secure`'s handshake completed. */
  secured(secure: Duplex & Addressed): void {
    const key = fourTuple(secure);
    const socket = this.#handshaking.get(key);
    if (socket === undefined) return;
    this.#handshaking.delete(key);
    this.#under.set(secure, socket);
    this.#over.set(socket, secure);
  }

  /** The TCP socket under `socket` (a TLS socket), or `socket` itself (plain HTTP, or not found). */
  tcpOf(socket: Duplex): Duplex {
    return this.#under.get(socket) ?? socket;
  }

  /** Destroys the accepted sockets whose TLS handshake has not completed (the listener closes). */
  destroyHandshaking(): void {
    for (const socket of [...this.#handshaking.values()]) socket.destroy();
  }

  /** The TLS socket over `socket` once its handshake completed. */
  secureOf(socket: Duplex): Duplex | undefined {
    return this.#over.get(socket as Socket);
  }
}

function fourTuple(socket: Addressed): string {
  return `${socket.localAddress ?? ""}|${socket.localPort ?? ""}|${socket.remoteAddress ?? ""}|${socket.remotePort ?? ""}`;
}
