/**
 * The streams of one loaded session, and how new ones come to be. It owns
 * the indexes a session is read through (by id, by token, the children an
 * item exposed) and the bounds on how many streams a session may have and
 * how large their mappings may grow together (message-room.ts). A new stream
 * is prepared here (its id and token minted, not yet registered), then
 * registered just before its introducing write is handed to the store, and
 * forgotten only when that write was refused. On a re-run, the streams the
 * run before created are matched instead of prepared again.
 *
 * Apart from `LiveSession` so that a newcomer finds what a session's streams
 * are in one place, and the session's file keeps to the order of its changes.
 */
import { randomUUID } from "node:crypto";
import { ProtocolError, type ServerCancelReason } from "@golem-stream/wire";
import type { SchemaType, StreamLeaf } from "@golem-stream/schema-value";
import { CountLimitError } from "../count-limit-error.js";
import type { Principal } from "../options.js";
import type { NewStream, SessionRecord, StreamParent, StreamRecord } from "../store/session-store.js";
import { describeElement, type SchemaGraph } from "../values.js";
import { MAX_SESSION_MAPPING_BYTES, widestMappingBytes } from "./message-room.js";
import { ReplayDivergence } from "./replay-divergence.js";
import type { SessionDeps } from "./session-deps.js";
import { StreamState, type PendingStream } from "./stream-state.js";

/** What the registry needs from its session. */
export interface RegistryHost {
  readonly deps: Pick<SessionDeps, "limits" | "tokens">;
  readonly owner: Principal;
  readonly sessionId: string;
  /** The session's record (its stream-token key). */
  record(): SessionRecord;
  /** A re-run: new streams are matched with the ones the run before created (method-run.ts). */
  replaying(): boolean;
}

export class StreamRegistry {
  readonly #host: RegistryHost;
  readonly #streams = new Map<string, StreamState>();
  readonly #byToken = new Map<string, StreamState>();
  /** Children by parent stream id, then by the sequence of the item that exposed them. */
  readonly #children = new Map<string, Map<bigint, StreamState[]>>();
  readonly #usedProvisionalRefs = new Set<string>();
  #nextOrdinal = 0;
  /** Sum of the widest mappings of the registered streams (message-room.ts). */
  #mappingBytes = 0;

  constructor(host: RegistryHost, streams: readonly StreamState[]) {
    this.#host = host;
    for (const stream of streams) this.register(stream);
    this.#nextOrdinal = streams.reduce((next, s) => Math.max(next, s.ordinal + 1), 0);
  }

  /** The registered streams, in the order they were registered. */
  values(): IterableIterator<StreamState> {
    return this.#streams.values();
  }

  /** Streams in creation order (the order mappings list them). */
  inOrder(): StreamState[] {
    return [...this.#streams.values()].sort((a, b) => a.ordinal - b.ordinal);
  }

  get(streamId: string): StreamState | undefined {
    return this.#streams.get(streamId);
  }

  byToken(token: string): StreamState | undefined {
    return this.#byToken.get(token);
  }

  childrenOf(streamId: string, sequence: bigint): readonly StreamState[] {
    return this.#children.get(streamId)?.get(sequence) ?? [];
  }

  register(stream: StreamState): void {
    this.#streams.set(stream.streamId, stream);
    this.#mappingBytes += widestMappingBytes(stream.direction, stream.token);
    this.#byToken.set(stream.token, stream);
    if (stream.provisionalRef !== undefined) this.#usedProvisionalRefs.add(stream.provisionalRef);
    if (stream.parent.kind === "item") {
      let bySequence = this.#children.get(stream.parent.streamId);
      if (bySequence === undefined) this.#children.set(stream.parent.streamId, (bySequence = new Map()));
      const siblings = bySequence.get(stream.parent.sequence) ?? [];
      siblings.push(stream);
      bySequence.set(stream.parent.sequence, siblings);
    }
  }

  /**
   * Undoes `register` for a stream whose introducing write the store refused: it never existed
   * for anyone else (no attachment announces a stream before its commit), and nothing waits for
   * its terminal. An agent reading it as an input sees it cancelled.
   */
  forget(stream: StreamState, reason: ServerCancelReason): void {
    if (stream.direction === "input" && stream.inputTerminal === undefined) {
      stream.inputTerminal = { kind: "cancelled", reason, by: "server" };
      stream.queue?.cancel(reason);
    }
    if (stream.direction === "output") stream.outputTerminal = true;
    this.#streams.delete(stream.streamId);
    this.#byToken.delete(stream.token);
    this.#mappingBytes -= widestMappingBytes(stream.direction, stream.token);
    if (stream.parent.kind === "item") {
      const siblings = this.#children.get(stream.parent.streamId)?.get(stream.parent.sequence);
      const at = siblings?.indexOf(stream) ?? -1;
      if (at >= 0) siblings!.splice(at, 1);
    }
  }

  /** Registers a stream another node created (cluster mode). */
  registerStored(stored: StreamRecord): StreamState {
    const stream = new StreamState(stored);
    this.register(stream);
    this.#nextOrdinal = Math.max(this.#nextOrdinal, stored.ordinal + 1);
    return stream;
  }

  /**
   * Turns the stream leaves of a validated value into new streams (not yet
   * committed). `graph` is the graph the value was validated against.
   */
  prepare(
    leaves: readonly StreamLeaf[],
    graph: SchemaGraph,
    direction: "input" | "output",
    parent: StreamParent,
    coordinatePrefix: string,
  ): PendingStream[] {
    // Most items introduce no stream: nothing to check or allocate for them.
    if (leaves.length === 0) return [];
    if (this.#host.replaying()) {
      const matched = this.#storedStreams(leaves, graph, direction, parent, coordinatePrefix);
      if (matched !== undefined) return matched;
    }
    if (this.#streams.size + leaves.length > this.#host.deps.limits.maxStreamsPerSession) {
      throw new CountLimitError("the session has reached its stream limit");
    }
    const seen = new Set<string>();
    const pending = leaves.map((leaf, index) => {
      const ref = "provisionalRef" in leaf.ref ? leaf.ref.provisionalRef : undefined;
      if (ref === undefined) throw new ProtocolError("validation-error", "a new stream must use a provisional reference");
      if (seen.has(ref) || this.#usedProvisionalRefs.has(ref)) {
        throw new ProtocolError("stream-already-consumed", "the stream reference was already used");
      }
      seen.add(ref);
      return this.#pendingStream(leaf.elementType, graph, direction, parent, `${coordinatePrefix}${leaf.coordinate}`, ref, index);
    });
    const added = pending.reduce((sum, p) => sum + widestMappingBytes(direction, p.state.token), 0);
    if (this.#mappingBytes + added > MAX_SESSION_MAPPING_BYTES) {
      throw new CountLimitError("the session's streams would no longer fit in one acceptance message");
    }
    this.#nextOrdinal += pending.length;
    return pending;
  }

  /**
   * A re-run's new streams that the run before created: the stored streams of the same
   * parent and coordinates, in the leaves' order; undefined when the run before created
   * none there (its introducing write was not committed). Anything between is non-determinism.
   */
  #storedStreams(
    leaves: readonly StreamLeaf[],
    graph: SchemaGraph,
    direction: "input" | "output",
    parent: StreamParent,
    coordinatePrefix: string,
  ): PendingStream[] | undefined {
    const found = leaves.map((leaf) => {
      const coordinate = `${coordinatePrefix}${leaf.coordinate}`;
      const stream = [...this.#streams.values()].find(
        (s) => s.direction === direction && s.coordinate === coordinate && sameParent(s.parent, parent),
      );
      return { leaf, stream };
    });
    if (found.every(({ stream }) => stream === undefined)) return undefined;
    return found.map(({ leaf, stream }) => {
      if (stream === undefined) throw new ReplayDivergence(`the run before created no stream at ${coordinatePrefix}${leaf.coordinate}`);
      if (describeElement(graph, leaf.elementType).canonicalGraph !== stream.elementGraphText) {
        throw new ReplayDivergence(`the stream at ${stream.coordinate} has another element type than the run before's`);
      }
      const record: NewStream = {
        streamId: stream.streamId,
        sessionId: this.#host.sessionId,
        direction: stream.direction,
        elementKind: stream.elementKind,
        elementGraph: stream.elementGraphText,
        coordinate: stream.coordinate,
        provisionalRef: stream.provisionalRef,
        parent: stream.parent,
        token: stream.token,
      };
      return { state: stream, record, stored: true };
    });
  }

  #pendingStream(
    elementType: SchemaType,
    graph: SchemaGraph,
    direction: "input" | "output",
    parent: StreamParent,
    coordinate: string,
    provisionalRef: string,
    index: number,
  ): PendingStream {
    const host = this.#host;
    const element = describeElement(graph, elementType);
    const streamId = randomUUID();
    const token = host.deps.tokens.mintStream(host.owner, host.sessionId, host.record().streamKeyId, {
      streamId,
      direction,
      elementSchemaDigest: element.digest,
      coordinate,
    });
    const record: NewStream = {
      streamId,
      sessionId: host.sessionId,
      direction,
      elementKind: element.kind,
      elementGraph: element.canonicalGraph,
      coordinate,
      // Only client references are kept: they resolve in mappings.
      provisionalRef: direction === "input" ? provisionalRef : undefined,
      parent,
      token,
    };
    const state = new StreamState({
      ...record,
      ordinal: this.#nextOrdinal + index,
      count: 0n,
      inputTerminal: undefined,
      outputTerminal: false,
    });
    return { state, record };
  }
}

function sameParent(a: StreamParent, b: StreamParent): boolean {
  if (a.kind !== "item" || b.kind !== "item") return a.kind === b.kind;
  return a.streamId === b.streamId && a.sequence === b.sequence;
}
