/**
 * The receiving side of the change feed: one LISTEN connection per store,
 * dispatching each notification `{"s": sessionId, "c": change}` to that
 * session's subscribers.
 *
 * When the connection drops, it is reconnected (100 ms, doubling up to 2 s)
 * and LISTEN is issued again. Notifications sent while it was down are
 * lost, so after every reconnect `onReconnect` runs: the store then tells
 * each subscriber, for its session, every change a write could have
 * published (see `PostgresSessionStore`), and subscribers re-read the store.
 *
 * A connection lost, or not made again, because PostgreSQL cannot be reached
 * (`isUnavailable`: a restart, a cut network) goes to `onUnavailable`, with
 * the wait before the next attempt: an outage is reported where the writer
 * reports its own, not as one error per attempt. Any other error goes to
 * `onError`.
 */
import pg from "pg";
import type { SessionChange, SessionChangeListener } from "@golem-stream/server/store";
import { asStoreError, isUnavailable } from "./store-error.js";

/** Every kind of change, checked against `SessionChange` (a kind missing here was dropped by every node). */
const KINDS: Record<SessionChange["kind"], true> = {
  output: true,
  input: true,
  result: true,
  finished: true,
  attached: true,
  cancel: true,
  delivered: true,
  consumed: true,
  alive: true,
  resync: true,
};
const CHANGE_KINDS: ReadonlySet<string> = new Set(Object.keys(KINDS));

/** Parses a notification payload; undefined for anything that is not a change this store sent. */
export function parseNote(payload: string | undefined): { sessionId: string; change: SessionChange } | undefined {
  if (payload === undefined) return undefined;
  try {
    const parsed = JSON.parse(payload) as { s?: unknown; c?: { kind?: unknown } };
    if (typeof parsed.s !== "string" || typeof parsed.c !== "object" || parsed.c === null || !CHANGE_KINDS.has(String(parsed.c.kind))) {
      return undefined;
    }
    return { sessionId: parsed.s, change: parsed.c as SessionChange };
  } catch {
    return undefined;
  }
}

export function encodeNote(sessionId: string, change: SessionChange): string {
  return JSON.stringify({ s: sessionId, c: change });
}

const RETRY_FIRST_MS = 100;
/** 2 s, as the writer's outage retries: after an outage the feed is back about when the writes are. */
const RETRY_MAX_MS = 2000;

export class ChangeFeed {
  readonly #connect: () => Promise<pg.Client>;
  readonly #channel: string;
  readonly #onReconnect: (sessionIds: string[]) => Promise<void>;
  readonly #onError: (error: Error) => void;
  readonly #onUnavailable: (error: Error, retryInMs: number) => void;
  readonly #listeners = new Map<string, Set<SessionChangeListener>>();
  #client: pg.Client | undefined;
  #retryMs = RETRY_FIRST_MS;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** How many times the connection was re-established (for tests and metrics). */
  reconnects = 0;

  constructor(options: {
    connect: () => Promise<pg.Client>;
    channel: string;
    onReconnect: (sessionIds: string[]) => Promise<void>;
    onError: (error: Error) => void;
    onUnavailable: (error: Error, retryInMs: number) => void;
  }) {
    this.#connect = options.connect;
    this.#channel = options.channel;
    this.#onReconnect = options.onReconnect;
    this.#onError = options.onError;
    this.#onUnavailable = options.onUnavailable;
  }

  /** Connects and listens; rejects if the first connection fails. */
  async start(): Promise<void> {
    await this.#listen();
  }

  subscribe(sessionId: string, listener: SessionChangeListener): () => void {
    let set = this.#listeners.get(sessionId);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(sessionId, set);
    }
    // A wrapper per subscription: the same function subscribed twice is two subscriptions.
    const entry: SessionChangeListener = (change) => listener(change);
    set.add(entry);
    return () => {
      const current = this.#listeners.get(sessionId);
      if (current === undefined) return;
      current.delete(entry);
      if (current.size === 0) this.#listeners.delete(sessionId);
    };
  }

  /** Calls every listener of `sessionId` with `change`; a throwing listener does not stop the others. */
  dispatch(sessionId: string, change: SessionChange): void {
    const set = this.#listeners.get(sessionId);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        listener(change);
      } catch (error) {
        this.#onError(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    this.#listeners.clear();
    await client?.end().catch(() => undefined);
  }

  async #listen(): Promise<void> {
    const client = await this.#connect();
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (error !== undefined) this.#lost(error);
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      this.#scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    client.on("notification", (message) => {
      if (message.channel !== this.#channel) return;
      const note = parseNote(message.payload);
      if (note !== undefined) this.dispatch(note.sessionId, note.change);
    });
    try {
      await client.query(`LISTEN ${pg.escapeIdentifier(this.#channel)}`);
    } catch (error) {
      lost = true;
      await client.end().catch(() => undefined);
      throw asStoreError(error);
    }
    if (this.#closed) {
      lost = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#retryMs = RETRY_FIRST_MS;
  }

  /** Reports why the connection is lost or could not be made, before the next attempt is scheduled. */
  #lost(error: Error): void {
    if (!this.#closed && isUnavailable(error)) this.#onUnavailable(error, this.#retryMs);
    else this.#onError(error);
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#timer !== undefined) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      this.#listen()
        .then(
          async () => {
            if (this.#closed) return;
            this.reconnects++;
            await this.#onReconnect([...this.#listeners.keys()]);
          },
          (error: unknown) => {
            this.#lost(error instanceof Error ? error : new Error(String(error)));
            this.#scheduleReconnect();
          },
        )
        .catch((error: unknown) => this.#onError(error instanceof Error ? error : new Error(String(error))));
    }, delay);
    this.#timer.unref();
  }
}
