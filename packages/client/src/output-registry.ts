/**
 * Every output stream of one session, by stream token: created on first
 * sight (acceptance mapping, result, item), paired with the cursor it
 * inherited from saved state, given the element schema of the value that
 * exposed it. Also the cursor set a resume sends.
 */
import {
  LIMITS,
  type InvocationOutcome,
  type InvocationResultBody,
  type JsonValue,
  type SchemaValueJson,
  type ClientCancelReason,
} from "@golem-stream/wire";
import type { SchemaGraph } from "@golem-stream/schema-value";
import { violation } from "./errors.js";
import { OutputStream, type OutputChunk, type OutputStreamHost } from "./output-stream.js";
import { checkResult, valueToJs, type ElementSchema } from "./schema.js";
import { isTerminalCursor, itemCursorPosition, streamIdentityOf } from "@golem-stream/wire/internal";
import { findStreamTokens } from "./values.js";

export interface OutputRegistryHost {
  /** A stream's queue changed by `deltaBytes` (backpressure accounting). */
  onQueueChange(stream: OutputStream, deltaBytes: number): void;
  /** A stream retained a cursor: resolves once saved, rejects if it cannot be; `undefined` when nothing is saved. */
  commit(): Promise<void> | undefined;
  sendCancel(stream: OutputStream, reason: ClientCancelReason): void;
  /** A stream became known. */
  onStream(stream: OutputStream): void;
  /** Streams of the session not kept here (inputs), for the per-session stream limit. */
  otherStreams(): number;
  /** What the first input source of the session that failed here threw (OutputStreamHost.inputFailure). */
  inputFailure(): { readonly error: unknown } | undefined;
  /** What a failure without a reason adds when this process was away from the server (OutputStreamHost.awayNote). */
  awayNote(): string | undefined;
  /** How the server finished the invocation, once known (OutputStreamHost.invocationOutcome). */
  invocationOutcome(): InvocationOutcome | undefined;
}

export class OutputRegistry {
  readonly #host: OutputRegistryHost;
  readonly #streams = new Map<string, OutputStream>();
  /** Cursors from saved state whose stream this process has not seen yet, keyed by stream identity. */
  readonly #inherited = new Map<string, string>();
  /** Those of them whose stream identity could not be read (keyed by the cursor itself): no stream is known to be not theirs. */
  readonly #unreadable = new Set<string>();

  constructor(host: OutputRegistryHost, inheritedCursors: readonly string[] = []) {
    this.#host = host;
    for (const cursor of inheritedCursors) {
      const identity = streamIdentityOf(cursor);
      if (identity === undefined) this.#unreadable.add(cursor);
      this.#inherited.set(identity ?? cursor, cursor);
    }
  }

  get streams(): ReadonlyMap<string, OutputStream> {
    return this.#streams;
  }

  /** The stream with this token, created on first sight. */
  streamFor(streamToken: string): OutputStream {
    const known = this.#streams.get(streamToken);
    if (known !== undefined) return known;
    // Every stream costs memory here; a server announcing more than the protocol allows is hostile.
    if (this.#streams.size + this.#host.otherStreams() >= LIMITS.maxStreamsPerSession) {
      throw violation(`server announced more than ${LIMITS.maxStreamsPerSession} streams`, "limit-exceeded");
    }
    const readIdentity = streamIdentityOf(streamToken);
    const identity = readIdentity ?? streamToken;
    const inherited = this.#inherited.get(identity);
    // An unreadable cursor is kept under its own text, which no stream's identity equals: it stays
    // unpaired (and the start check relaxed) for the session's life.
    if (inherited !== undefined) this.#inherited.delete(identity);
    // A stream without an inherited cursor starts at sequence 0 unless it may be the stream of a
    // cursor that could not be paired with it (one whose identity, or its own, could not be read):
    // then it starts wherever the server resumes it. One with an inherited cursor starts after the
    // item the cursor names (OutputStream's `deliveredAt`), or anywhere if its position is unread.
    const unpairable = this.#unreadable.size > 0 || (readIdentity === undefined && this.#inherited.size > 0);
    const knownStart = inherited === undefined && !unpairable;
    let stream: OutputStream | undefined;
    const host: OutputStreamHost = {
      onQueueChange: (_entries, bytes) => this.#host.onQueueChange(stream!, bytes),
      onCommit: () => this.#host.commit(),
      sendCancel: (target, reason) => this.#host.sendCancel(target, reason),
      onItemDropped: (chunk) => this.#dropNested(chunk),
      inputFailure: () => this.#host.inputFailure(),
      awayNote: () => this.#host.awayNote(),
      invocationOutcome: () => this.#host.invocationOutcome(),
    };
    const deliveredAt = inherited === undefined ? undefined : itemCursorPosition(inherited);
    stream = new OutputStream(streamToken, host, {
      ...(inherited === undefined ? {} : { retainedCursor: inherited }),
      ...(deliveredAt === undefined ? {} : { deliveredAt }),
      knownStart,
      // Holding its terminal cursor, the stream is complete: the server replays nothing for it.
      terminalDelivered: inherited !== undefined && isTerminalCursor(inherited),
    });
    this.#streams.set(streamToken, stream);
    this.#host.onStream(stream);
    return stream;
  }

  /** One retained cursor per stream that has one, plus inherited cursors of streams not seen yet. */
  cursorSet(): string[] {
    const cursors: string[] = [];
    for (const stream of this.#streams.values()) {
      const cursor = stream.retainedCursor;
      if (cursor !== undefined) cursors.push(cursor);
    }
    for (const cursor of this.#inherited.values()) cursors.push(cursor);
    return cursors;
  }

  /** Pins element schemas to the streams a checked value exposed (first schema wins). */
  adoptSchemas(schemas: ReadonlyMap<string, ElementSchema>): void {
    for (const [token, schema] of schemas) {
      const stream = this.streamFor(token);
      if (stream.schema === undefined) stream.bindSchema(schema, (value) => this.#toJs(schema.graph, schema.elementType, value));
    }
  }

  /** Registers the streams an item exposes, with their coordinates inside it. */
  locateNested(value: SchemaValueJson): void {
    for (const leaf of findStreamTokens(value as unknown as JsonValue)) {
      const stream = this.streamFor(leaf.streamToken);
      stream.coordinate ??= leaf.coordinate;
    }
  }

  /** An item will never be handed out: the streams it nests are dropped, unless already read (`OutputStream.dropUnread`). */
  #dropNested(chunk: OutputChunk): void {
    if (chunk instanceof Uint8Array || "bytes" in chunk) return;
    for (const leaf of findStreamTokens(chunk as unknown as JsonValue)) this.#streams.get(leaf.streamToken)?.dropUnread();
  }

  /** Validates a result, registers its streams in document order, and offers its JavaScript view. */
  adoptResult(result: InvocationResultBody): { streams: OutputStream[]; toJs: () => unknown } {
    const streams: OutputStream[] = [];
    if (result.kind !== "value") return { streams, toJs: () => undefined };
    const checked = checkResult(result.graph, result.value);
    this.adoptSchemas(checked.streams);
    for (const leaf of findStreamTokens(result.value as unknown as JsonValue)) {
      const stream = this.streamFor(leaf.streamToken);
      stream.coordinate ??= leaf.coordinate;
      streams.push(stream);
    }
    return { streams, toJs: () => this.#toJs(checked.graph, undefined, result.value) };
  }

  #toJs(graph: SchemaGraph, type: ElementSchema["elementType"] | undefined, value: SchemaValueJson): unknown {
    return valueToJs(graph, type, value, (token) => this.#streams.get(token));
  }
}
