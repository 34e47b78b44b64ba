/**
 * The protocol runtime without sockets: `Connection` and `SessionRuntime`
 * over an in-memory `SessionTransport` and the memory store. A transport
 * records what the server sent, as a client would decode it; a connection
 * can be cut as a dropped socket would be.
 */
import { Keyring } from "@golem-stream/tokens";
import { decodeServerMessage, encodeMessage, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import { NOOP_OBSERVER, type ServerObserver } from "../../src/observability/server-observer.js";
import { Connection } from "../../src/transport/connection.js";
import { SYSTEM_TIMERS, type Timers } from "../../src/timers.js";
import { SessionRuntime } from "../../src/admission/session-runtime.js";
import { StoredBytesTable } from "../../src/admission/stored-bytes.js";
import { TokenService } from "../../src/admission/token-service.js";
import { MemorySessionStore, resolveLimits, silentLogger, type AgentHost, type Logger, type ServerLimits } from "../../src/index.js";
import type { SessionStore } from "../../src/store/index.js";
import { createDemoHost } from "../../src/demo/index.js";
import { NodeBudget } from "../../src/invocation/node-budget.js";
import { encodeOutgoing, type OutgoingMessage, type SessionTransport } from "../../src/transport/transport.js";

/**
 * How many turns of the event loop (`setImmediate`) may pass without a new
 * message before a wait gives up. The in-memory server does all its work in
 * microtasks, `process.nextTick` and immediates, so a few turns without
 * progress mean nothing more is coming; the bound is generous and costs a
 * few milliseconds only when a wait fails.
 */
const QUIET_TURNS = 500;

/** One turn of the event loop: what `setImmediate` waits for. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class MemoryTransport implements SessionTransport {
  readonly sent: ServerMessage[] = [];
  /** The stored value bytes of the items sent without re-encoding their values. */
  readonly storedValues: Uint8Array[] = [];
  closedWith: number | undefined;
  paused = false;
  /** Called once after the server closed this transport, as a socket's close event would be. */
  onClosed: (() => void) | undefined;
  #waiters: (() => void)[] = [];
  /** While set, sends are recorded but their promises settle only at `releaseSends` (a socket above its high-water mark). */
  #held: (() => void)[] | undefined;

  get isOpen(): boolean {
    return this.closedWith === undefined;
  }
  send(message: OutgoingMessage): Promise<void> {
    if (this.isOpen) {
      if ("canonicalValue" in message) this.storedValues.push(message.canonicalValue);
      // Kept as the client would decode it.
      this.sent.push("canonicalValue" in message ? decodeServerMessage(encodeOutgoing(message), false) : message);
    }
    for (const waiter of this.#waiters.splice(0)) waiter();
    const held = this.#held;
    return held === undefined ? Promise.resolve() : new Promise((resolve) => held.push(resolve));
  }
  /** From now on, a sender that waits for its send waits until `releaseSends`. */
  holdSends(): void {
    this.#held ??= [];
  }
  releaseSends(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const release of held) release();
  }
  close(code: number): void {
    if (this.closedWith === undefined) {
      this.closedWith = code;
      const onClosed = this.onClosed;
      if (onClosed !== undefined) setImmediate(onClosed);
    }
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
  pauseReading(): void {
    this.paused = true;
  }
  resumeReading(): void {
    this.paused = false;
  }
  /** Waits until `predicate` holds or the transport closes (no bound: for tests that know it will). */
  async until(predicate: (sent: readonly ServerMessage[]) => boolean): Promise<void> {
    while (!predicate(this.sent) && this.closedWith === undefined) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
  /**
   * Waits until `predicate` holds, bounded by progress: it fails, naming
   * `what` and the messages so far, when the transport closes first or the
   * server goes quiet (QUIET_TURNS turns without a message) first.
   */
  async expect(what: string, predicate: (sent: readonly ServerMessage[]) => boolean): Promise<void> {
    let seen = this.sent.length;
    let quiet = 0;
    while (!predicate(this.sent)) {
      if (this.closedWith !== undefined) throw new Error(`closed with ${this.closedWith} before ${what}; sent: ${describe(this.sent)}`);
      await nextTurn();
      if (this.sent.length !== seen) {
        seen = this.sent.length;
        quiet = 0;
      } else if (++quiet > QUIET_TURNS) {
        throw new Error(`the server went quiet before ${what}; sent: ${describe(this.sent)}`);
      }
    }
  }
  /** Waits until the server closes this transport, bounded by progress as `expect` is. */
  async expectClose(what: string): Promise<number> {
    let seen = this.sent.length;
    let quiet = 0;
    while (this.closedWith === undefined) {
      await nextTurn();
      if (this.sent.length !== seen) {
        seen = this.sent.length;
        quiet = 0;
      } else if (++quiet > QUIET_TURNS) {
        throw new Error(`the server went quiet before closing (${what}); sent: ${describe(this.sent)}`);
      }
    }
    return this.closedWith;
  }
}

/**
 * Waits until `predicate` holds over several transports, bounded by progress
 * as `MemoryTransport.expect` is (a message or a close on any counts as progress).
 */
export async function expectAcross(what: string, transports: readonly MemoryTransport[], predicate: () => boolean): Promise<void> {
  const progress = (): number => transports.reduce((sum, t) => sum + t.sent.length + (t.closedWith === undefined ? 0 : 1), 0);
  let seen = progress();
  let quiet = 0;
  while (!predicate()) {
    await nextTurn();
    if (progress() !== seen) {
      seen = progress();
      quiet = 0;
    } else if (++quiet > QUIET_TURNS) {
      throw new Error(`the server went quiet before ${what}; sent: ${transports.map((t) => describe(t.sent)).join(" | ")}`);
    }
  }
}

/** A short rendering of a message log for failure messages. */
export function describe(messages: readonly ServerMessage[]): string {
  return JSON.stringify(
    messages.map((m) => ({
      ...m,
      ...("cursorToken" in m ? { cursorToken: "…" } : {}),
      ...("sessionToken" in m ? { sessionToken: "…" } : {}),
    })),
    (_key, value: unknown) => (typeof value === "bigint" ? `${value}n` : value),
  );
}

export interface MemoryConnection<T extends MemoryTransport = MemoryTransport> {
  readonly transport: T;
  readonly connection: Connection;
  send(message: ClientMessage): void;
  /** The client's socket drops: nothing more is sent to it, and the server sees the close. */
  cut(): void;
}

export interface MemoryHarnessOptions {
  readonly limits?: Partial<ServerLimits>;
  /** The runtime's timers (the detached timeout); real ones unless given. */
  readonly timers?: Timers;
  /**
   * The store (a fresh `MemorySessionStore` unless given: a subclass that holds or fails writes, say).
   * A second harness over the first's store and keyring is the server after a restart.
   */
  readonly store?: SessionStore;
  readonly keyring?: Keyring;
  /** The agents (the demo unless given). */
  readonly host?: AgentHost;
  /** Sees what the runtime reports (backpressure, input accepted, output recorded); a no-op unless given. */
  readonly observer?: ServerObserver;
  /** The node's byte budget (a fresh one of the default size unless given): a test reads what is held. */
  readonly nodeBudget?: NodeBudget;
  /** Hears the runtime's log lines; silent unless given. */
  readonly logger?: Logger;
}

export function memoryHarness(options: MemoryHarnessOptions = {}) {
  const store = options.store ?? new MemorySessionStore();
  const keyring = options.keyring ?? Keyring.generate();
  const runtime = new SessionRuntime(
    {
      store,
      cluster: undefined,
      host: options.host ?? createDemoHost(),
      tokens: new TokenService(keyring, { issuer: "test", audience: "test" }),
      limits: resolveLimits(options.limits ?? {}),
      logger: options.logger ?? silentLogger,
      observer: options.observer ?? NOOP_OBSERVER,
      now: Date.now,
      timers: options.timers ?? SYSTEM_TIMERS,
      nodeBudget: options.nodeBudget ?? new NodeBudget(resolveLimits().maxQueuedBytesPerNode),
      storedBytes: new StoredBytesTable(resolveLimits().maxStoredBytesPerPrincipal, () => undefined),
    },
    () => true,
  );
  const open = <T extends MemoryTransport = MemoryTransport>(transport: T = new MemoryTransport() as T): MemoryConnection<T> => {
    const connection = new Connection(transport, { account: "a", principal: "p" }, runtime);
    transport.onClosed = () => connection.transportClosed();
    const send = (message: ClientMessage): void => {
      const data = encodeMessage(message);
      connection.receive(typeof data === "string" ? new TextEncoder().encode(data) : data, typeof data !== "string");
    };
    const cut = (): void => {
      if (transport.closedWith !== undefined) return;
      transport.onClosed = undefined;
      transport.closedWith = 1006;
      connection.transportClosed();
    };
    return { transport, connection, send, cut };
  };
  return { store, keyring, runtime, open };
}
