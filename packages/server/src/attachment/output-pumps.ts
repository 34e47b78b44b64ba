/**
 * The output side of one attachment: a pump per output stream that reads
 * the stream's durable log from the client's cursor on and sends each
 * event. Everything sent is read back from the store, so a first
 * attachment, an exact-attempt replay and a resume are the same code with
 * different starting cursors. A pump starts only once the message carrying
 * its stream's mapping has been handed to the transport (announcement
 * before use, section 8). Events committed while the attachment is live
 * are also kept for a moment in the pump's tail (committed-tail.ts), so a
 * pump that keeps up sends them without a store query.
 */
import type { OutputOutcome } from "@golem-stream/wire";
import { asSendable } from "../invocation/message-room.js";
import type { AttachmentLink } from "./attachment-link.js";
import { SENT } from "../transport/transport.js";
import { CommittedTail, TailAllowance } from "./committed-tail.js";
import type { OutputEvent } from "../store/session-store.js";
import type { StreamState } from "../invocation/stream-state.js";
import type { CursorEvent } from "@golem-stream/tokens";

/** The mappings of an item that introduces no stream (most): one shared empty list. */
const NO_MAPPINGS: readonly never[] = Object.freeze([]);
/** The tokens of the streams an item introduces, when it introduces none (most): one shared empty list. */
const NO_TOKENS: readonly string[] = Object.freeze([]);
/** The streams a terminal introduces: none. */
const NO_CHILDREN: readonly StreamState[] = Object.freeze([]);

/** How many log events a pump reads per store query (or takes from its tail), at most. */
const PUMP_BATCH = 64;
/**
 * Payload bytes a pump reads per store query: it stops after the event that
 * reaches this. Without it a batch held up to 64 items of up to 16 MiB each
 * (1 GiB per output stream, outside the session's byte permits) while a slow
 * client took them one by one.
 */
export const PUMP_BATCH_BYTES = 1024 * 1024;

/**
 * What a verified output cursor says (a resume's or takeover's `outputCursors`): the pump of
 * `streamId` starts after the event at `position`. `TokenService.verifyCursor` returns it.
 */
export interface CursorPosition {
  readonly streamId: string;
  readonly position: bigint;
  readonly event: CursorEvent;
}

interface Pump {
  readonly stream: StreamState;
  /** Next sequence to read from the log. */
  next: bigint;
  state: "waiting" | "active" | "done";
  running: boolean;
  /** Set by every kick: there may be events the pump has not read yet. */
  dirty: boolean;
  /** The stream's cursor tokens (TokenService.cursorsOf), made at the first send. */
  cursors?: (position: bigint, event: "item" | "terminal") => string;
  /** Events committed while this attachment was live and not sent yet (a cache of the log). */
  readonly tail: CommittedTail;
}

export class OutputPumps {
  readonly #link: AttachmentLink;
  readonly #pumps = new Map<string, Pump>();
  /** Streams introduced by an item that can never be sent (see `#sendable`). */
  readonly #unexposed = new Set<string>();
  /** What all the pumps' tails may hold together. */
  readonly #tailAllowance = new TailAllowance();

  constructor(link: AttachmentLink) {
    this.#link = link;
  }

  /** Creates the stream's pump at the client's cursor (none: from the start); false if the client has seen its terminal. */
  place(stream: StreamState, cursor: CursorPosition | undefined): boolean {
    const pump = this.#add(stream, cursor === undefined ? 0n : cursor.position + 1n, cursor?.event === "terminal" ? "done" : "waiting");
    return pump.state !== "done";
  }

  /**
   * Whether a replayed message on this connection will carry the stream's
   * mapping: the result (always re-sent) or an item its parent's pump
   * will replay.
   */
  exposedByReplay(stream: StreamState): boolean {
    const parent = stream.parent;
    if (parent.kind === "result") return true;
    if (parent.kind !== "item") return false;
    const pump = this.#pumps.get(parent.streamId);
    return pump !== undefined && pump.state !== "done" && pump.next <= parent.sequence;
  }

  /** The stream's mapping has been handed to the transport: its pump may run. */
  start(stream: StreamState): void {
    const pump = this.#pumps.get(stream.streamId) ?? this.#add(stream, 0n, "waiting");
    if (pump.state === "waiting") {
      pump.state = "active";
      this.#kick(pump);
    }
  }

  #add(stream: StreamState, next: bigint, state: "waiting" | "done"): Pump {
    const pump: Pump = { stream, next, state, running: false, dirty: false, tail: new CommittedTail(this.#tailAllowance) };
    this.#pumps.set(stream.streamId, pump);
    return pump;
  }

  /** The stream's log grew; `committed` is the event this process just committed, when it knows it. */
  appended(stream: StreamState, committed?: OutputEvent): void {
    const pump = this.#pumps.get(stream.streamId);
    if (pump === undefined) return;
    if (committed !== undefined && pump.state !== "done" && !this.#link.isEnded()) pump.tail.offer(committed, pump.next);
    this.#kick(pump);
  }

  /** Whether every output stream of the session has sent its terminal on this connection. */
  allDone(): boolean {
    for (const stream of this.#link.session.streams()) {
      if (stream.direction !== "output") continue;
      const pump = this.#pumps.get(stream.streamId);
      if ((pump === undefined || pump.state !== "done") && !this.#neverExposed(stream)) return false;
    }
    return true;
  }

  #kick(pump: Pump): void {
    if (pump.state !== "active" || this.#link.isEnded()) return;
    pump.dirty = true;
    if (pump.running) return;
    pump.running = true;
    // The run starts a microtask later: a commit settles a whole group of
    // events at once, each offered to the tail by its own reaction, and a
    // run started by the first would send it alone and end (sends no longer
    // await), leaving one run per event. Started after them, one run takes
    // the group in batches.
    queueMicrotask(() => void this.#run(pump).catch((error: unknown) => this.#link.fault(error)));
  }

  /**
   * Sends the log from `pump.next` on while there may be more. `dirty` is
   * set by every kick, and `running` is cleared in the same synchronous step
   * that sees it clear, so no kick can fall between two runs.
   */
  async #run(pump: Pump): Promise<void> {
    const link = this.#link;
    const store = link.session.deps.store;
    try {
      while (pump.dirty && pump.state === "active" && !link.isEnded()) {
        pump.dirty = false;
        const cached = pump.tail.take(pump.next, PUMP_BATCH);
        // Nothing in the log from here on could be sent (see `known`): no query. The kicks of a
        // commit's other events, after one run took them all from the tail, read nothing.
        if (cached === undefined && !mayHaveMore(pump.stream, pump.next)) continue;
        const events = cached ?? (await store.readOutput(pump.stream.streamId, pump.next, PUMP_BATCH, PUMP_BATCH_BYTES));
        let bytes = 0;
        let ahead = false;
        for (const logged of events) {
          if (!known(pump.stream, logged)) {
            ahead = true;
            break;
          }
          if (logged.event === "item") bytes += logged.data.length;
          const children = logged.event === "item" ? link.session.childrenOf(pump.stream.streamId, logged.sequence) : NO_CHILDREN;
          const event = this.#sendable(pump.stream, logged, children);
          if (link.isEnded()) return;
          const sent = this.#send(pump, event, children);
          if (sent !== SENT) await sent;
          if (link.isEnded()) return;
          link.session.delivered(pump.stream, event.event === "item" ? event.data.length : 0);
          if (event.event === "item")
            link.session.deps.observer.outputSent(pump.stream.elementKind, Number(event.itemCount), event.data.length);
          if (event.event === "terminal") {
            pump.state = "done";
            pump.tail.clear();
            link.channels.close(pump.stream.streamId);
            link.maybeFinish();
            return;
          }
          pump.next = event.sequence + event.itemCount;
        }
        // A full batch, by count or by bytes: there may be more. (Not when the
        // log ran ahead of the session: the sync that catches up kicks again.)
        if (!ahead && (events.length === PUMP_BATCH || bytes >= PUMP_BATCH_BYTES || (cached !== undefined && pump.tail.size > 0)))
          pump.dirty = true;
      }
    } finally {
      pump.running = false;
    }
  }

  /**
   * The event as this attachment may send it (message-room.ts): an item a
   * log from before the size check holds but no message can carry reads as
   * its stream's producer-error terminal, and the streams it introduced are
   * never exposed (they and their descendants count as done).
   */
  #sendable(stream: StreamState, logged: OutputEvent, children: readonly StreamState[]): OutputEvent {
    if (logged.event !== "item") return logged;
    const event = asSendable(logged, stream.elementKind, children.length === 0 ? NO_TOKENS : children.map((child) => child.token));
    if (event !== logged) for (const child of children) this.#unexposed.add(child.streamId);
    return event;
  }

  /** Whether the stream, or a stream it descends from, was introduced by an item that is never sent. */
  #neverExposed(stream: StreamState): boolean {
    for (let current: StreamState | undefined = stream; current !== undefined;) {
      if (this.#unexposed.has(current.streamId)) return true;
      const parent: StreamState["parent"] = current.parent;
      current = parent.kind === "item" ? this.#link.session.stream(parent.streamId) : undefined;
    }
    return false;
  }

  /** Hands the event's message to the transport (`children`: the streams its item introduces); `SENT` when the pump may go on at once (no await per item). */
  #send(pump: Pump, event: OutputEvent, children: readonly StreamState[]): Promise<void> {
    const link = this.#link;
    const session = link.session;
    const stream = pump.stream;
    const channel = link.channels.forStream(stream.streamId)?.channel ?? 0;
    pump.cursors ??= session.deps.tokens.cursorsOf(session.owner, session.sessionId, stream.streamId);
    const cursorToken = pump.cursors(event.sequence, event.event);
    if (event.event === "terminal") {
      return link.send({
        type: "outputStreamEnd",
        channel,
        cursorToken,
        outcome: JSON.parse(event.outcome) as OutputOutcome,
        sequence: event.sequence,
      });
    }
    if (stream.elementKind === "u8") {
      return link.send({ type: "output-u8", channel, sequence: event.sequence, cursorToken, payload: event.data });
    }
    if (stream.elementKind === "binary") {
      return link.send({
        type: "output-binary",
        channel,
        sequence: event.sequence,
        cursorToken,
        payload: event.data,
        ...(event.mimeType === undefined ? {} : { mimeType: event.mimeType }),
      });
    }
    const sent = link.send({
      type: "outputStreamItem",
      channel,
      cursorToken,
      mappings: children.length === 0 ? NO_MAPPINGS : children.map((child) => link.mapping(child, false)),
      sequence: event.sequence,
      // Recorded as canonical JSON (output-items.ts): sent as stored, never parsed again.
      canonicalValue: event.data,
    });
    if (children.length === 0) return sent;
    // The children's channels open once the transport has taken their mappings.
    const announce = (): void => {
      for (const child of children) link.announced(child);
    };
    if (sent === SENT) {
      announce();
      return SENT;
    }
    return sent.then(announce);
  }
}

/** Whether the session knows of an event at `next` or later (`known` would let one through). */
function mayHaveMore(stream: StreamState, next: bigint): boolean {
  return stream.outputTerminal || next < stream.count;
}

/**
 * Whether the session in memory knows of the logged event: the item lies
 * within the stream's count, the terminal is recorded. The owner counts an
 * event (and registers the streams its item introduces) before committing
 * it, so for the owner every committed event is known. A mirror learns from
 * its syncs, and the store's log can be ahead of its last one: an item read
 * before the sync that registers the nested streams it introduces would go
 * out without their mappings, and those streams would never be announced
 * (a hang at the client). The pump stops there; the sync kicks it again.
 */
function known(stream: StreamState, logged: OutputEvent): boolean {
  return logged.event === "terminal" ? stream.outputTerminal : logged.sequence + logged.itemCount <= stream.count;
}
