/**
 * How many connections the server's own listener holds that are not session
 * sockets: requests being read or answered, idle keep-alive connections,
 * upgrades waiting for their authenticator. Each of those is bounded in time
 * (`limits.httpRequestTimeoutMs`, the keep-alive timeout, the throttle's
 * queue), but not in number: a client opening connections faster than they
 * time out, from one address or many, would hold as many file descriptors
 * and parsers as it liked. Session sockets have their own bound
 * (`limits.maxConnections`) and leave this count once they are sessions.
 */
import type { Duplex } from "node:stream";

export class ConnectionGate {
  readonly #max: number;
  readonly #held = new Set<Duplex>();

  constructor(max: number) {
    this.#max = max;
  }

  /** Counts `socket` until it closes or becomes a session; false, counting nothing, when `max` are held. */
  admit(socket: Duplex): boolean {
    if (this.#held.size >= this.#max) return false;
    this.#held.add(socket);
    socket.once("close", () => this.#held.delete(socket));
    return true;
  }

  /** `socket` is a session socket now: `limits.maxConnections` counts it instead. */
  release(socket: Duplex): void {
    this.#held.delete(socket);
  }
}
