/**
 * The one attachment that owns a live session, and what happens while there
 * is none. A new attachment revokes the one before (takeover); a session
 * that runs here and that nobody attaches to is given up after
 * `limits.detachedSessionTimeoutMs` (detached-watch.ts): every open stream
 * ends `transport-detached`, and the invocation ends as its method does (one
 * that has not returned fails). In
 * a cluster, an attachment at another node counts as one (the owner hears
 * of it), and a node serving one says so to the owner.
 *
 * Apart from `LiveSession` because whom the session answers to, and when it
 * stops waiting for someone, is one rule read on its own: the session asks
 * `current` and tells the slot what changed.
 */
import type { ServerCancelReason } from "@golem-stream/wire";
import { identityOf } from "../observability/server-observer.js";
import type { SessionRecord } from "../store/session-store.js";
import type { AttachmentSink } from "./attachment-sink.js";
import { DetachedWatch } from "./detached-watch.js";
import type { SessionDeps } from "./session-deps.js";

/** What the slot needs from its session. */
export interface SlotHost {
  readonly deps: SessionDeps;
  record(): SessionRecord;
  /** Whether this node would give the session up for want of an attachment: it runs the invocation, and it is not over. */
  mayGiveUp(): boolean;
  /** A mirror of a running session: another node runs it, this one serves its attachment. */
  remote(): boolean;
  failing(): boolean;
  /** Serving node: tells the owner an attachment is still here (cluster-follower.ts). */
  attachmentAlive(): void;
  terminalizeAll(reason: ServerCancelReason): Promise<void>;
  /** Fails the invocation if its method has not returned yet: its signal aborts and the run stops waiting for it. */
  failUnreturned(why: string): Promise<void>;
  fail(error: unknown): Promise<void>;
}

export class AttachmentSlot {
  readonly #host: SlotHost;
  #current: AttachmentSink | undefined;
  /** Gives the running session up after `limits.detachedSessionTimeoutMs` without an attachment (detached-watch.ts). */
  readonly #detachedWatch: DetachedWatch;

  constructor(host: SlotHost) {
    this.#host = host;
    this.#detachedWatch = new DetachedWatch(
      host.deps.limits.detachedSessionTimeoutMs,
      () => void this.#giveUpDetached(),
      () => host.attachmentAlive(),
      host.deps.timers,
    );
  }

  /** The attachment that owns the session, if any. */
  get current(): AttachmentSink | undefined {
    return this.#current;
  }

  /** Makes `sink` the sole owner; the previous owner is revoked first. */
  attach(sink: AttachmentSink): void {
    const previous = this.#current;
    this.#current = sink;
    this.#detachedWatch.attached();
    if (this.#host.remote()) this.#detachedWatch.serving();
    // The output windows go on: events recorded and not yet sent stay
    // charged until the new attachment sends them (it replays from its
    // client's cursor, which no unsent event precedes). Restarting them here
    // let a producer run a whole window ahead of a client that had just
    // reconnected, once per reconnect. A re-sent event counts again, which
    // only loosens the window by what was replayed.
    if (previous !== undefined && previous !== sink) previous.revoke();
  }

  detach(sink: AttachmentSink): void {
    if (this.#current !== sink) return;
    this.#current = undefined;
    this.#noLocalAttachment();
  }

  /** Cluster: an attachment at another node took the session over; `sink` owns it no more. */
  revoke(sink: AttachmentSink): void {
    this.#current = undefined;
    sink.revoke();
    this.#noLocalAttachment();
  }

  /** Owner: another node serves an attachment (it attached there, or says it still does): the wait starts over. */
  attachedElsewhere(): void {
    if (this.#current === undefined && this.#host.mayGiveUp()) this.#detachedWatch.wait();
  }

  /** A re-run started after a restart: nobody is attached, and a client that never comes back lets the session go as after a detach. */
  waitIfNone(): void {
    if (this.#current === undefined) this.#detachedWatch.wait();
  }

  /** The session is over here (finished, unloaded, shut down, claimed elsewhere): no timer is left. */
  stopWatching(): void {
    this.#detachedWatch.stop();
  }

  /** The local attachment is gone (detached or revoked): a serving node stops saying it serves; an owner waits. */
  #noLocalAttachment(): void {
    this.#detachedWatch.notServing();
    if (this.#host.mayGiveUp()) this.#detachedWatch.wait();
  }

  /**
   * No client came back: every open stream ends `transport-detached` in the store, then the
   * invocation ends as its method does; a method still computing its result fails, as nothing
   * else would ever end it (no stream left to cancel, and the protocol has no other cancel).
   */
  async #giveUpDetached(): Promise<void> {
    const host = this.#host;
    if (this.#current !== undefined || !host.mayGiveUp() || host.failing()) return;
    const timeoutMs = host.deps.limits.detachedSessionTimeoutMs;
    host.deps.observer.sessionGivenUp(identityOf(host.record()), timeoutMs);
    try {
      await host.terminalizeAll("transport-detached");
      await host.failUnreturned(`given up: no attachment for ${timeoutMs} ms (detachedSessionTimeoutMs) while the method had not returned`);
    } catch (error) {
      await host.fail(error);
    }
  }
}
