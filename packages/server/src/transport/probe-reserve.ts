/**
 * Connections past `limits.maxHttpConnections` that may still carry a probe.
 * A liveness probe or a metrics scrape refused while the server is merely busy
 * (a thousand idle keep-alive connections are a loaded server, not a dead one)
 * would restart a healthy process or blind its monitoring. So a connection
 * over the budget is not answered `overloaded` at once: it has a short grace
 * to send its request, and a probe (`GET /healthz`, `/metrics`) is answered
 * and its connection closed; anything else, a request not whole within the
 * grace, or an upgrade is answered `overloaded` and closed as before. The
 * grace and the reserve's size bound what this costs: at most `PROBE_RESERVE`
 * such connections at once, each for at most `PROBE_GRACE_MS`, and one
 * request each.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

/** Connections over the budget waiting for their request at once; one more is refused unread. */
export const PROBE_RESERVE = 32;
/** How long such a connection has for its whole request head: a probe sends it at once. */
export const PROBE_GRACE_MS = 1_000;

export class ProbeReserve {
  /** Sockets held until they close, and the grace timer of those whose request has not arrived. */
  readonly #held = new Map<Duplex, NodeJS.Timeout | undefined>();
  readonly #graceMs: number;

  constructor(requestTimeoutMs: number) {
    this.#graceMs = Math.min(PROBE_GRACE_MS, requestTimeoutMs);
  }

  /** Holds `socket` until it closes; `expired` runs at the grace unless its request came. False when the reserve is full. */
  admit(socket: Duplex, expired: () => void): boolean {
    if (this.#held.size >= PROBE_RESERVE) return false;
    const timer = setTimeout(() => {
      this.#held.set(socket, undefined);
      expired();
    }, this.#graceMs);
    timer.unref();
    this.#held.set(socket, timer);
    socket.once("close", () => {
      clearTimeout(this.#held.get(socket));
      this.#held.delete(socket);
    });
    return true;
  }

  /**
   * Whether `socket` is held here and its request came within the grace. It
   * still counts until it closes, so a client slow to read the answer cannot
   * make room for more; and it carries this one request only.
   */
  take(socket: Duplex): boolean {
    if (!this.#held.has(socket)) return false;
    const timer = this.#held.get(socket);
    clearTimeout(timer);
    this.#held.set(socket, undefined);
    return timer !== undefined;
  }

  /** Whether `socket` is over the budget: it may carry no request but its first probe. */
  holds(socket: Duplex): boolean {
    return this.#held.has(socket);
  }
}

/** Whether `request` is a probe a connection over the budget may carry. */
export function isProbeRequest(request: IncomingMessage, probePaths: ReadonlySet<string>): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  const target = request.url ?? "";
  const query = target.indexOf("?");
  return probePaths.has(query < 0 ? target : target.slice(0, query));
}
