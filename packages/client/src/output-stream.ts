/**
 * One output stream as the application sees it: an async iterable (and a Web
 * `ReadableStream`) of items, with the cursor discipline of protocol 6.4/6.5
 * and section 7 built in.
 *
 * Cursor rule (exact): the value handed out by `next()` is *delivered* when
 * the consumer comes back for more — the next `next()` call, a `return()`
 * (leaving a `for await` loop) or `cancel()`. Only then does its cursor
 * become the stream's retained cursor and reach the persistence callback. A
 * packed `stream<u8>` batch is one `Uint8Array` chunk, so its cursor moves
 * only once the whole batch has been handed over and the consumer asks again.
 * The terminal cursor is retained only after the consumer observed the end
 * (`next()` settled with `done` or the stream's error: in the next turn of the
 * event loop, or at once when the consumer comes back first) or cancelled. A
 * consumer that comes back after the end waits for that save. A crash while
 * the consumer holds an item, or before it saw the end, therefore replays it:
 * at-least-once, never a gap.
 *
 * A stream whose terminal cursor came with saved state (a takeover) is
 * complete from the start: the server replays nothing for it (protocol 6.5),
 * so it ends at once, without items or error, as `already-delivered`.
 *
 * Why one file: the consumer side (next, return, cancel, the ReadableStream) and the session side
 * (items, ends, halts) share one queue and one cursor; splitting them would expose that queue to
 * both, which is what the cursor rule above must keep private.
 */
import type { InvocationOutcome, OutputOutcome, SchemaValueJson, ServerCancelReason, ClientCancelReason } from "@golem-stream/wire";
import { ClientError, SERVER_GENERIC_FAILURE, invalidCancelReason, isClientCancelReason, violation } from "./errors.js";
import type { BinaryBlob } from "./input-stream.js";
import { nextTurn } from "./event-loop-turns.js";
import type { ElementSchema } from "./schema.js";

/**
 * How a stream ended, as far as this process can know:
 *
 * - the server's terminal outcome (`ok`, `error`, `cancelled`);
 * - `already-delivered`: the saved state this handle continued from held the
 *   stream's terminal cursor, so an earlier consumer already observed the end.
 *   Cursor tokens do not say how a stream ended, so the outcome itself is not
 *   known here; the iterator simply ends.
 * - `detached`: this handle stopped (failure, cancel, detach) before the
 *   terminal arrived; `error` says why. The stream may still end on the server.
 */
export type StreamOutcome =
  OutputOutcome | { readonly kind: "already-delivered" } | { readonly kind: "detached"; readonly error: ClientError };

/** What an output stream yields: a native value, a packed byte batch, or one binary item. */
export type OutputChunk = SchemaValueJson | Uint8Array | BinaryBlob;

/** The runtime's side of a stream: queue accounting, cursor persistence, cancellation. */
export interface OutputStreamHost {
  /** Queue size changed; the host pauses or resumes the connection. */
  onQueueChange(deltaEntries: number, deltaBytes: number): void;
  /**
   * A cursor became retained; resolves once the persistence callback has run,
   * rejects with the `checkpoint-failed` error if it could not be saved;
   * `undefined` when nothing is saved (no persistence callback).
   */
  onCommit(): Promise<void> | undefined;
  /** The consumer cancelled or dropped the stream. */
  sendCancel(stream: OutputStream, reason: ClientCancelReason): void;
  /**
   * A received item will never reach the consumer: it cancelled or dropped the stream first. The
   * streams nested in that item are unreachable through it, so the host drops them too.
   */
  onItemDropped(chunk: OutputChunk): void;
  /**
   * What the first input source of this call that failed here threw, if one did: the likely
   * cause of an output failing next (the producer reading that input fails), which the server's
   * public, generic message cannot say. Boxed: a source may throw `undefined`.
   */
  inputFailure(): { readonly error: unknown } | undefined;
  /**
   * What a stream the server cancelled `invocation-failed` without a reason adds when this
   * process was away from the server during the call (a connection lost, or a start from saved
   * state): a restart may have failed it, which only this process can say. Undefined when it was not away.
   */
  awayNote(): string | undefined;
  /** How the server finished the invocation, once it said so: why it cancelled a stream `invocation-failed`. */
  invocationOutcome(): InvocationOutcome | undefined;
}

interface Entry {
  readonly chunk: OutputChunk;
  readonly cursorToken: string;
  readonly bytes: number;
}

interface Ending {
  readonly outcome: StreamOutcome;
  readonly cursorToken: string | undefined;
}

/**
 * One output stream of an invocation: an async iterable of its items (native values, `Uint8Array`
 * batches of a `stream<u8>`, `{ bytes, mimeType? }` of a `stream<binary>`), read by one consumer,
 * with backpressure to the server. An item counts as delivered when the next one is asked for.
 */
export class OutputStream implements AsyncIterable<OutputChunk> {
  /** The stream's token, stable for the session (what a `{"kind":"stream"}` node of the result names). */
  readonly streamToken: string;
  /** JSON pointer of the stream inside the value that first exposed it to this process, if known. */
  coordinate: string | undefined;

  readonly #host: OutputStreamHost;
  readonly #queue: Entry[] = [];
  #head = 0;
  /** Next logical sequence expected from the server; `undefined` until known (streams inherited from a checkpoint). */
  #nextSequence: bigint | undefined;
  /**
   * Inherited from a checkpoint: the position of the item whose cursor it holds, delivered
   * already. Until the start is known, a replay of that item or of any before it is dropped: a
   * retried resume can carry an older cursor than the one saved beside it (protocol §9).
   */
  #deliveredAt: bigint | undefined;
  #ending: Ending | undefined;
  #retained: string | undefined;
  /** Cursor of the value most recently handed out, not yet delivered. */
  #handedOut: string | undefined;
  /** The terminal's cursor, once the consumer was handed the end and until it is retained (`#retainObservedEnd`). */
  #observedEnd: string | undefined;
  /** The save of the terminal's cursor, which a consumer coming back after the end waits for. */
  #endSaved: Promise<void> | undefined;
  #cancelReason: ClientCancelReason | undefined;
  /** The server's terminal arrived (or the stream was complete from the start), whatever the consumer saw. */
  #serverEnded = false;
  #finished = false;
  #iterating = false;
  /** Reads waiting for an entry or the end: all are woken, and each takes what is there in call order. */
  #wakers: (() => void)[] = [];
  #doneResolve!: (outcome: StreamOutcome) => void;
  /** Set when delivery must stop at once (the persistence callback failed): thrown by the next `next()`. */
  #halted: ClientError | undefined;
  /** The handle detached: no cursor moves past the state `detach()` returned. */
  #detached = false;
  /** Resolves with the terminal outcome once it is known (see `StreamOutcome`). */
  readonly ended: Promise<StreamOutcome>;

  /**
   * @internal The runtime creates output streams.
   * `retainedCursor`: the cursor inherited from saved state; when it is the
   * stream's terminal cursor (`terminalDelivered`) the stream starts complete.
   */
  constructor(
    streamToken: string,
    host: OutputStreamHost,
    options: { retainedCursor?: string; knownStart?: boolean; terminalDelivered?: boolean; deliveredAt?: bigint } = {},
  ) {
    this.streamToken = streamToken;
    this.#host = host;
    this.#retained = options.retainedCursor;
    this.#nextSequence = options.knownStart === false ? undefined : 0n;
    this.#deliveredAt = options.deliveredAt;
    this.ended = new Promise((resolve) => (this.#doneResolve = resolve));
    if (options.terminalDelivered === true && options.retainedCursor !== undefined) {
      this.#ending = { outcome: { kind: "already-delivered" }, cursorToken: options.retainedCursor };
      this.#serverEnded = true;
      this.#doneResolve(this.#ending.outcome);
    }
  }

  /** The element schema pinned by the value that exposed this stream, once known. */
  get schema(): ElementSchema | undefined {
    return this.#schema;
  }
  #schema: ElementSchema | undefined;
  #convert: ((value: SchemaValueJson) => unknown) | undefined;

  /** @internal */
  bindSchema(schema: ElementSchema, convert: (value: SchemaValueJson) => unknown): void {
    this.#schema = schema;
    this.#convert = convert;
  }

  /** The retained (delivered) cursor, sent on resume. */
  get retainedCursor(): string | undefined {
    return this.#retained;
  }

  /**
   * The client asked to cancel and the server's terminal has not arrived —
   * also after this handle stopped reading because the whole invocation was
   * cancelled, whose cancellations must still reach the server.
   */
  get cancelRequested(): ClientCancelReason | undefined {
    return this.#serverEnded ? undefined : this.#cancelReason;
  }

  /** Its end is known here: the server's terminal arrived, it was complete when taken over, or the handle stopped. */
  get terminalReceived(): boolean {
    return this.#ending !== undefined;
  }

  /** The server's terminal arrived, or the stream was complete when this handle took it over. */
  get serverEnded(): boolean {
    return this.#serverEnded;
  }

  /** Items (or packed batches) received and not yet handed to the consumer. */
  get queuedEntries(): number {
    return this.#queue.length - this.#head;
  }

  /** Bytes those entries hold, as charged against the session's budget. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }
  #queuedBytes = 0;

  // ---- fed by the session ----

  /**
   * @internal One item (count 1) or packed batch (count = bytes) at `sequence`. Replays are dropped, overlaps
   * trimmed. True when it carried something this process had not received (reconnect progress).
   */
  pushItem(sequence: bigint, count: bigint, chunk: OutputChunk, cursorToken: string, wireBytes: number): boolean {
    if (this.#ending !== undefined) return false; // replay after the terminal: already have everything
    const end = sequence + count;
    if (this.#nextSequence === undefined && this.#deliveredAt !== undefined) {
      const deliveredAt = this.#deliveredAt;
      if (end <= deliveredAt) return false; // before the item delivered last
      if (sequence === deliveredAt) {
        // The item delivered last: the replay goes on after it.
        this.#nextSequence = end;
        return false;
      }
      // Or the replay starts after it: at the next item, or anywhere beyond a packed batch (the
      // cursor does not say how many bytes that batch held).
      if (sequence > deliveredAt + 1n && !(chunk instanceof Uint8Array)) {
        throw violation(`output stream resumed at sequence ${sequence}, after item ${deliveredAt} was delivered`);
      }
    }
    const expected = this.#nextSequence ?? sequence;
    if (end <= expected) return false; // an identical replay of something already queued or delivered
    if (sequence > expected) throw violation(`output stream skipped from sequence ${expected} to ${sequence}`);
    if (sequence < expected) {
      // A replayed packed batch overlapping what we hold: keep only the unseen suffix.
      if (!(chunk instanceof Uint8Array)) throw violation("a non-batch output item overlaps a delivered one");
      chunk = chunk.subarray(Number(expected - sequence));
    }
    this.#nextSequence = end;
    if (this.#cancelReason !== undefined || this.#finished) {
      // Dropped by the consumer: discarded, with whatever it nests.
      this.#host.onItemDropped(chunk);
      return true;
    }
    const bytes = Math.max(wireBytes, chunkBytes(chunk));
    this.#queue.push({ chunk, cursorToken, bytes });
    this.#queuedBytes += bytes;
    this.#host.onQueueChange(1, bytes);
    this.#notify();
    return true;
  }

  /** @internal The stream's terminal; true the first time the server's terminal arrives (reconnect progress). */
  pushEnd(sequence: bigint, outcome: OutputOutcome, cursorToken: string | undefined): boolean {
    if (this.#ending !== undefined) {
      // A replay, or the terminal of a stream this handle stopped reading (an invocation-wide
      // cancel): nothing for the consumer, but the server has ended it.
      const first = !this.#serverEnded;
      this.#serverEnded = true;
      return first;
    }
    if (this.#cancelReason === undefined) this.#checkEnd(sequence);
    this.#serverEnded = true;
    this.#ending = { outcome, cursorToken };
    this.#doneResolve(outcome);
    if (this.#cancelReason !== undefined || this.#finished) {
      // The consumer already observed its own cancellation: the terminal is delivered.
      this.#finished = true;
      // A failure to save it fails the whole session, which reports it.
      this.#retain(cursorToken)?.catch(() => undefined);
    }
    this.#notify();
    return true;
  }

  /** The end's sequence is the count of items: the next one expected, or the one after the item an inherited cursor names. */
  #checkEnd(sequence: bigint): void {
    if (this.#nextSequence !== undefined) {
      if (sequence !== this.#nextSequence) throw violation(`output stream ended at sequence ${sequence}, expected ${this.#nextSequence}`);
      return;
    }
    // Unless the stream is a stream<u8>, whose delivered batch may have held any number of bytes.
    const deliveredAt = this.#deliveredAt;
    if (deliveredAt !== undefined && this.#schema !== undefined && this.#schema.direct !== "u8" && sequence !== deliveredAt + 1n) {
      throw violation(`output stream ended at sequence ${sequence} right after item ${deliveredAt} was delivered`);
    }
  }

  // ---- the consumer side ----

  /**
   * Reads the stream (one consumer: a second call throws `invalid-argument`). A stream that ends
   * with an error throws `stream-failed`; leaving a `for await` early cancels it (`consumer-drop`).
   */
  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
    if (this.#iterating) throw new ClientError("invalid-argument", "an output stream has one consumer; it is already being read");
    this.#iterating = true;
    return {
      next: () => this.#next(),
      return: async () => {
        await this.cancel("consumer-drop");
        return { done: true, value: undefined };
      },
    };
  }

  /** Native values of a non-binary stream. */
  values(): AsyncIterable<SchemaValueJson> {
    return this.#typed((chunk) => !(chunk instanceof Uint8Array) && !("bytes" in chunk), "native values");
  }

  /** Packed batches of a `stream<u8>`. */
  bytes(): AsyncIterable<Uint8Array> {
    return this.#typed((chunk) => chunk instanceof Uint8Array, "byte batches");
  }

  /** Items of a `stream<binary>`. */
  blobs(): AsyncIterable<BinaryBlob> {
    return this.#typed((chunk) => !(chunk instanceof Uint8Array) && "bytes" in chunk, "binary items");
  }

  /**
   * Items as plain JavaScript, converted with the stream's element schema
   * (`@golem-stream/schema-value`'s `toJs`): records become objects, u64 a
   * bigint, nested streams `OutputStream`s. Byte batches and binary items pass
   * through unchanged. Needs the schema, which the result provides, or the item that exposed a
   * nested stream: without it (a nested stream first seen after a takeover) `next()` throws
   * `invalid-argument` before taking an item, and the stream stays unread for `values()`.
   */
  js(): AsyncIterable<unknown> {
    return {
      [Symbol.asyncIterator]: () => {
        const inner = this[Symbol.asyncIterator]();
        return {
          next: async (): Promise<IteratorResult<unknown, undefined>> => {
            if (this.#convert === undefined) {
              // Checked before the item is taken, which would count it as delivered.
              const upcoming = await this.#upcoming();
              if (upcoming !== undefined && isNativeValue(upcoming) && this.#convert === undefined) throw this.#refuseView(NO_SCHEMA);
            }
            const result = await inner.next();
            if (result.done || !isNativeValue(result.value)) return result;
            // Unknown still only when another next() took the item checked above.
            const convert = this.#convert;
            if (convert === undefined) {
              await inner.return?.();
              throw new ClientError("invalid-argument", NO_SCHEMA);
            }
            return { done: false, value: convert(result.value) };
          },
          return: async () => {
            await inner.return?.();
            return { done: true, value: undefined };
          },
        };
      },
    };
  }

  /** A Web `ReadableStream` view; pulling it follows the same cursor rule as `next()`. */
  readable(): ReadableStream<OutputChunk> {
    const iterator = this[Symbol.asyncIterator]();
    return new ReadableStream<OutputChunk>(
      {
        async pull(controller) {
          const result = await iterator.next();
          if (result.done) controller.close();
          else controller.enqueue(result.value);
        },
        async cancel() {
          await iterator.return?.();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /**
   * Stops reading: the value handed out last counts as delivered, queued items
   * are released, the server ends the stream as `cancelled` (or
   * `consumer-drop`). Idempotent; a no-op after the terminal was observed.
   */
  async cancel(reason: ClientCancelReason = "cancelled"): Promise<void> {
    // Checked before anything changes: a reason the wire cannot carry would otherwise fail
    // deep inside the transport, or on the next reconnect as if the server had erred.
    if (!isClientCancelReason(reason)) throw invalidCancelReason(reason);
    if (this.#halted !== undefined) return;
    if (this.#finished) return this.#endRetained();
    this.#finished = true;
    const handedOut = this.#handedOut;
    this.#handedOut = undefined;
    const released = this.#release();
    // Tell the server first and synchronously: a caller may close the connection right after.
    const ending = this.#ending;
    if (ending === undefined) {
      this.#cancelReason = reason;
      this.#host.sendCancel(this, reason);
    }
    for (const entry of released) this.#host.onItemDropped(entry.chunk);
    this.#notify();
    await this.#retain(handedOut);
    if (ending !== undefined) await this.#retain(ending.cursorToken);
  }

  /**
   * The consumer came back for more: the item it held is delivered now (§1); the save to wait for,
   * if there is one. Detached, it stays undelivered: whoever continues hands it out again.
   */
  #deliverHandedOut(): Promise<void> | undefined {
    const cursor = this.#handedOut;
    if (cursor === undefined || this.#detached) return undefined;
    this.#handedOut = undefined;
    return this.#retain(cursor)?.catch((error: unknown) => {
      // Its cursor could not be saved: the stream stops here (the session halts every stream).
      this.#finished = true;
      throw error;
    });
  }

  /**
   * What the next `next()` would hand out, left in the queue: a view checks it can take it before
   * it does, as an item taken counts as delivered once the consumer comes back. The consumer came
   * back, so the item it held is delivered. `undefined` when the end (or a halt) comes next.
   */
  async #upcoming(): Promise<OutputChunk | undefined> {
    const saving = this.#deliverHandedOut();
    if (saving !== undefined) await saving;
    for (;;) {
      if (this.#finished || this.#halted !== undefined) return undefined;
      const entry = this.#queue[this.#head];
      if (entry !== undefined) return entry.chunk;
      if (this.#ending !== undefined) return undefined;
      await new Promise<void>((resolve) => this.#wakers.push(resolve));
    }
  }

  /**
   * A view cannot take the next item (no schema to convert it, another kind of item): nothing was
   * taken, so the stream stays unread, and another view may read it.
   */
  #refuseView(message: string): ClientError {
    this.#iterating = false;
    return new ClientError("invalid-argument", message);
  }

  async #next(): Promise<IteratorResult<OutputChunk, undefined>> {
    const saving = this.#deliverHandedOut();
    if (saving !== undefined) await saving;
    for (;;) {
      if (this.#finished) {
        await this.#endRetained();
        return { done: true, value: undefined };
      }
      if (this.#halted !== undefined) {
        this.#finished = true;
        throw this.#halted;
      }
      const entry = this.#queue[this.#head];
      if (entry !== undefined) {
        this.#queue[this.#head++] = undefined as unknown as Entry;
        if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
          this.#queue.splice(0, this.#head);
          this.#head = 0;
        }
        this.#queuedBytes -= entry.bytes;
        this.#host.onQueueChange(-1, -entry.bytes);
        this.#handedOut = entry.cursorToken;
        return { done: false, value: entry.chunk };
      }
      if (this.#ending !== undefined) {
        this.#finished = true;
        this.#observeEnd(this.#ending.cursorToken);
        const outcome = this.#ending.outcome;
        if (outcome.kind === "ok" || outcome.kind === "already-delivered") return { done: true, value: undefined };
        if (outcome.kind === "detached") throw outcome.error;
        throw outcomeError(outcome, this.#host.inputFailure(), this.#host.awayNote(), this.#host.invocationOutcome());
      }
      await new Promise<void>((resolve) => this.#wakers.push(resolve));
    }
  }

  #typed<T extends OutputChunk>(accept: (chunk: OutputChunk) => boolean, what: string): AsyncIterable<T> {
    return {
      [Symbol.asyncIterator]: () => {
        const inner = this[Symbol.asyncIterator]();
        // A stream's items are all of one kind: the first one checked before it is taken tells.
        let kindChecked = false;
        return {
          next: async () => {
            if (!kindChecked) {
              const upcoming = await this.#upcoming();
              if (upcoming !== undefined && !accept(upcoming)) throw this.#refuseView(`stream does not carry ${what}`);
              kindChecked = upcoming !== undefined;
            }
            const result = await inner.next();
            if (!result.done && !accept(result.value)) {
              await inner.return?.();
              throw new ClientError("invalid-argument", `stream does not carry ${what}`);
            }
            return result as IteratorResult<T, undefined>;
          },
          return: async () => {
            await inner.return?.();
            return { done: true, value: undefined };
          },
        };
      },
    };
  }

  /**
   * The consumer is being handed the end (`done` or the stream's error): its cursor may be
   * retained only once the consumer has it (protocol 6.5), so not before `next()` settled. A
   * macrotask later every reaction of the consumer's to it has run (the CLI reports an error end
   * and decides its exit status there); a consumer that comes back sooner retains it then.
   */
  #observeEnd(cursor: string | undefined): void {
    if (cursor === undefined || cursor === this.#retained) return;
    this.#observedEnd = cursor;
    void nextTurn().then(() => this.#retainObservedEnd()?.catch(() => undefined));
  }

  /** Retains the terminal's cursor observed by the consumer, if not done yet; the save, if there is one. */
  #retainObservedEnd(): Promise<void> | undefined {
    const cursor = this.#observedEnd;
    if (cursor !== undefined) {
      this.#observedEnd = undefined;
      // A failure to save it stops the session like any other (StatePersistence); this promise
      // tells the consumer that comes back after the end.
      this.#endSaved = this.#retain(cursor);
    }
    return this.#endSaved;
  }

  /** A consumer came back after the end: the terminal's cursor is retained now if not yet, and saved. */
  async #endRetained(): Promise<void> {
    await this.#retainObservedEnd();
  }

  /**
   * Makes `cursor` the retained one; the promise (of the persistence callback) when there is
   * something to wait for. Without a callback there is not, and the consumer's next item is
   * taken without a promise and a turn of the microtask queue per item.
   */
  #retain(cursor: string | undefined): Promise<void> | undefined {
    // Detached, the state stays what `detach()` returned: whoever continues from it delivers the rest.
    if (cursor === undefined || cursor === this.#retained || this.#detached) return undefined;
    this.#retained = cursor;
    return this.#host.onCommit();
  }

  /** Empties the queue; what it held, never handed out. */
  #release(): Entry[] {
    const released = this.#queue.slice(this.#head);
    let bytes = 0;
    for (const entry of released) bytes += entry.bytes;
    this.#queue.length = 0;
    this.#head = 0;
    this.#queuedBytes = 0;
    if (released.length > 0) this.#host.onQueueChange(-released.length, -bytes);
    return released;
  }

  /**
   * @internal The item that exposed this stream never reached a consumer (`onItemDropped`): unless
   * someone already reads it (found through `call.streams` or the `stream` event), nobody can, and
   * an unread stream would stall the session (protocol 12), so it is dropped as `consumer-drop`.
   */
  dropUnread(): void {
    if (this.#iterating || this.#finished || this.#halted !== undefined) return;
    // A cursor that cannot be saved fails the whole session, which reports it.
    this.cancel("consumer-drop").catch(() => undefined);
  }

  /**
   * @internal The invocation failed before this stream's terminal arrived.
   * Items already queued are still delivered; then the consumer gets `error`.
   */
  abort(error: ClientError): void {
    if (this.#ending !== undefined) return;
    this.#ending = { outcome: { kind: "detached", error }, cursorToken: undefined };
    this.#doneResolve(this.#ending.outcome);
    this.#notify();
  }

  /**
   * @internal The whole invocation is being cancelled (`invocation.cancel()`, the caller's
   * signal): the server is told `cancelled`, queued items are released, and the consumer's next
   * `next()` throws `error` — an invocation cut short must not look like a stream that ended.
   * The item handed out last becomes delivered only if its consumer comes back for more.
   */
  cancelWith(error: ClientError): void {
    if (this.#finished || this.#halted !== undefined) return;
    if (this.#ending === undefined && this.#cancelReason === undefined) {
      this.#cancelReason = "cancelled";
      this.#host.sendCancel(this, "cancelled");
    }
    this.halt(error);
  }

  /**
   * @internal The handle detached (`detach()`), handing the rest to whoever continues from the
   * state it returned: delivery stops as in `halt`, and no cursor moves any more, not even for the
   * item the consumer holds or an end it observed — the state must stay what was returned.
   */
  detach(error: ClientError): void {
    this.#detached = true;
    this.halt(error);
  }

  /**
   * @internal Delivery stops now: the persistence callback failed, so no
   * further cursor could be saved. Queued items are released, not handed out;
   * the consumer's next `next()` throws `error`.
   */
  halt(error: ClientError): void {
    if (this.#finished || this.#halted !== undefined) return;
    this.#halted = error;
    this.#release();
    if (this.#ending === undefined) {
      this.#ending = { outcome: { kind: "detached", error }, cursorToken: undefined };
      this.#doneResolve(this.#ending.outcome);
    }
    this.#notify();
  }

  #notify(): void {
    const wakers = this.#wakers;
    if (wakers.length === 0) return;
    this.#wakers = [];
    for (const wake of wakers) wake();
  }
}

const NO_SCHEMA =
  "this stream's element schema is unknown (it was not exposed by a result or item seen here): nothing was taken; read its native values with values()";

/** A native value, not a packed byte batch or a binary item. */
function isNativeValue(chunk: OutputChunk): chunk is SchemaValueJson {
  return !(chunk instanceof Uint8Array) && !("bytes" in chunk);
}

function chunkBytes(chunk: OutputChunk): number {
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  if ("bytes" in chunk) return chunk.bytes.byteLength;
  return 0; // a decoded native value: the session charges its wire size
}

function outcomeError(
  outcome: Exclude<OutputOutcome, { kind: "ok" }>,
  inputFailure: { readonly error: unknown } | undefined,
  awayNote: string | undefined,
  finished: InvocationOutcome | undefined,
): ClientError {
  if (outcome.kind === "error") {
    if (inputFailure === undefined) return new ClientError("stream-failed", outcome.message, { code: outcome.code });
    // Said from the input's side: that is where the caller must look (its source threw, or an item
    // did not fit). The server's message ("producer failed") only says that the method failed this
    // output, most likely at the input this client cancelled: said as its consequence, not a cause.
    const { error } = inputFailure;
    const why = error instanceof Error ? error.message : String(error);
    return new ClientError(
      "stream-failed",
      `an input of this call failed: ${why}. The client cancelled that input, and the agent's method then failed this output (the server says: ${outcome.message})`,
      {
        code: outcome.code,
        cause: error,
      },
    );
  }
  // The server cancels every stream of an invocation it fails with `invocation-failed` and says why
  // in the invocation's own finish: its reason goes on the stream's error when it is known. One it
  // gives no reason for may, after this process was away, have been a restart (docs/protocol/client.md §3).
  const note = outcome.reason === "invocation-failed" && inputFailure === undefined ? failureNote(finished, awayNote) : "";
  return new ClientError("stream-cancelled", `stream cancelled: ${outcome.reason}${note}`, {
    reason: outcome.reason as ServerCancelReason,
  });
}

/** What an `invocation-failed` cancel of a stream adds: the invocation's reason, if the server gave one and it is known yet. */
function failureNote(finished: InvocationOutcome | undefined, awayNote: string | undefined): string {
  if (finished?.kind !== "failure") return "";
  if (finished.message !== SERVER_GENERIC_FAILURE) return `: ${finished.code}: ${finished.message}`;
  return awayNote === undefined ? "" : `: ${awayNote}`;
}
