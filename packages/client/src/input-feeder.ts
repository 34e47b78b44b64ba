/**
 * Feeds one input stream: pulls its source, numbers the logical items, keeps
 * every item the server has not durably acknowledged in a byte-bounded buffer
 * and resends exactly the suffix beyond the server's high-water after a
 * reconnect (protocol section 9). When the buffer is full the source is simply
 * not pulled — the producer is paused, nothing is queued without bound.
 */
import { LIMITS, type ClientCancelReason, type ClientMessage, type SchemaValueJson } from "@golem-stream/wire";
import { isMimeType } from "@golem-stream/wire/internal";
import { ClientError, violation } from "./errors.js";
import { TurnBudget, nextTurn } from "./event-loop-turns.js";
import { CheckedInputItem, checkInputItem, checkedItemLength } from "./item-encoding.js";
import { PendingValues } from "./pending-values.js";
import type { InputStream, BinaryBlob } from "./input-stream.js";
import { isByteChunk, toBytes, type PullIterator } from "./sources.js";
import { describeJs } from "@golem-stream/schema-value";

export interface FeederLink {
  readonly channel: number;
  send(message: ClientMessage): void;
  /** The connection's write backpressure (`Connection.congested`), when it has one. */
  congested?(drained: () => void): boolean;
}

export interface FeederHost {
  /** Freezes an item value: replaces nested bindings by provisional refs and registers them. */
  freezeValue(binding: InputStream, item: unknown): SchemaValueJson;
  /** The source failed; the server is told `source-unavailable`. */
  onSourceFailure(binding: InputStream, error: unknown): void;
  /** The server durably accepted more of this stream (items or its terminal): the session made progress. */
  onAcknowledged?(): void;
}

/** An unacknowledged chunk of a byte stream (a value stream's items are kept in `PendingValues`). */
type Pending =
  | { readonly kind: "u8"; readonly sequence: bigint; readonly payload: Uint8Array }
  | { readonly kind: "binary"; readonly sequence: bigint; readonly payload: Uint8Array; readonly mimeType?: string };

type Terminal = { readonly kind: "end" } | { readonly kind: "cancel"; readonly reason: ClientCancelReason };

const countOf = (entry: Pending): bigint => (entry.kind === "u8" ? BigInt(entry.payload.byteLength) : 1n);

export class InputFeeder {
  readonly binding: InputStream;
  /** The provisional reference frozen into the message that introduced this stream. */
  /** Changes only when a start is re-attempted under a new attempt id (protocol 3.2). */
  provisionalRef: string;
  streamToken: string | undefined;

  readonly #host: FeederHost;
  readonly #maxUnackedBytes: number;
  readonly #source: PullIterator<unknown>;
  /** A byte stream's unacknowledged chunks in sequence order; `#head` skips acknowledged ones without shifting. */
  #pending: Pending[] = [];
  #head = 0;
  /** A value stream's unacknowledged items (its chunks are never in `#pending`). */
  readonly #values: PendingValues | undefined;
  #unackedBytes = 0;
  #nextSequence = 0n;
  /** Items taken from a `stream<u8>` or `stream<binary>` source: the index a refused one is named by. */
  #itemsTaken = 0;
  #acked = 0n;
  #terminal: Terminal | undefined;
  #terminalAcked = false;
  /** This stream's own terminal went out on the current connection. */
  #terminalSentHere = false;
  /** The server cancelled this input (`streamCancel`): its terminal may count fewer items than were sent. */
  #cancelledByServer = false;
  #link: FeederLink | undefined;
  #pumping = false;
  #wakePump: (() => void) | undefined;
  /** What the pump sent since the event loop last had a turn (event-loop-turns.ts). */
  readonly #turn = new TurnBudget();
  #settle!: () => void;
  /** Resolves once the server has durably recorded this stream's terminal. */
  readonly settled: Promise<void>;

  constructor(
    binding: InputStream,
    provisionalRef: string,
    host: FeederHost,
    maxUnackedBytes: number = LIMITS.defaultClientUnackedInputBytes,
  ) {
    this.binding = binding;
    this.provisionalRef = provisionalRef;
    this.#host = host;
    this.#maxUnackedBytes = maxUnackedBytes;
    this.#source = binding.claim();
    this.#values = binding.element === "value" ? new PendingValues(0n) : undefined;
    binding.onCancel((reason) => this.cancel(reason));
    this.settled = new Promise((resolve) => (this.#settle = resolve));
  }

  get done(): boolean {
    return this.#terminalAcked;
  }

  /** Neither ended nor cancelled yet: the method reading it is still waiting for what comes. */
  get open(): boolean {
    return this.#terminal === undefined && !this.#terminalAcked;
  }

  /** The server recorded this stream's terminal, or it was sent on the current connection. */
  get terminalSent(): boolean {
    return this.#terminalAcked || (this.#link !== undefined && this.#terminal !== undefined);
  }

  /** Bytes held for a possible resend. */
  get unackedBytes(): number {
    return this.#unackedBytes;
  }

  /**
   * A connection mapped this stream to `channel`; `highWater` is the server's durable state. A
   * terminal there is taken as it is, even one that counts fewer items than this input's end: the
   * server's cancel (an agent that stopped reading, decisions §8) may have been lost with the
   * connection before, and the durable state does not say which terminal it holds.
   */
  attach(link: FeederLink, highWater: { readonly sequence: bigint; readonly terminal: boolean }): void {
    this.#link = link;
    this.#terminalSentHere = false;
    this.#record(highWater.sequence, highWater.terminal);
    if (this.#terminalAcked) return;
    for (let i = this.#head; i < this.#pending.length; i++) this.#send(this.#pending[i]!);
    this.#values?.forEach((sequence, text) => this.#sendValue(sequence, text));
    if (this.#terminal !== undefined) this.#sendTerminal();
    if (!this.#pumping) void this.#pump();
  }

  detach(): void {
    this.#link = undefined;
    this.#terminalSentHere = false;
  }

  /**
   * An `inputStreamAck`: `count` items are durably accepted; `terminal` when the stream's end or
   * cancel is. On one connection a terminal follows the server's `streamCancel`, or this input's
   * own terminal sent on it; after its end, it counts exactly the items the end counted. Anything
   * else would report an input complete whose items the agent never got.
   */
  acknowledge(count: bigint, terminal: boolean): void {
    if (this.#terminalAcked) return;
    if (terminal && !this.#cancelledByServer) {
      if (!this.#terminalSentHere) throw violation("a terminal inputStreamAck for an input that neither ended nor was cancelled");
      if (this.#terminal?.kind === "end" && count !== this.#nextSequence) {
        throw violation(`a terminal inputStreamAck of ${count} input items; the input ended after ${this.#nextSequence}`);
      }
    }
    this.#record(count, terminal);
  }

  #record(count: bigint, terminal: boolean): void {
    if (this.#terminalAcked) return;
    if (count > this.#nextSequence) throw violation(`server acknowledged ${count} input items; only ${this.#nextSequence} were sent`);
    if (count < this.#acked) throw violation(`server acknowledgement went back from ${this.#acked} to ${count}`);
    const advanced = count > this.#acked || terminal;
    if (this.#values !== undefined) this.#unackedBytes -= this.#values.dropBefore(count);
    while (this.#head < this.#pending.length) {
      const entry = this.#pending[this.#head]!;
      const end = entry.sequence + countOf(entry);
      if (end <= count) {
        this.#unackedBytes -= chargeOf(entry);
        this.#pending[this.#head++] = undefined as unknown as Pending;
        continue;
      }
      if (entry.kind === "u8" && entry.sequence < count) {
        // Part of a packed batch is durable: keep only the suffix for a resend.
        const cut = Number(count - entry.sequence);
        this.#unackedBytes -= cut;
        this.#pending[this.#head] = { kind: "u8", sequence: count, payload: entry.payload.subarray(cut) };
      }
      break;
    }
    if (this.#head > 256 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
    this.#acked = count;
    if (advanced) this.#host.onAcknowledged?.();
    if (terminal) {
      this.#terminalAcked = true;
      this.#pending = [];
      this.#head = 0;
      this.#values?.clear(this.#nextSequence);
      this.#unackedBytes = 0;
      void this.#source.close().catch(() => undefined);
      this.#settle();
    }
    this.#wake();
  }

  /**
   * The application cancels this input (`cancelled`). Items the server has
   * not acknowledged are dropped: a cancel carries no sequence, so after a
   * reconnect only the cancel is sent, not the buffered input before it.
   */
  cancel(reason: ClientCancelReason = "cancelled"): void {
    if (this.#terminal !== undefined || this.#terminalAcked) return;
    this.#terminal = { kind: "cancel", reason };
    this.#pending = [];
    this.#head = 0;
    this.#values?.clear(this.#nextSequence);
    this.#unackedBytes = 0;
    void this.#source.close().catch(() => undefined);
    this.#sendTerminal();
    this.#wake();
  }

  /** The server cancelled this input; its terminal ACK follows. Stop reading the source now. */
  serverCancelled(): void {
    this.#cancelledByServer = true;
    if (this.#terminal === undefined) this.#terminal = { kind: "cancel", reason: "cancelled" };
    void this.#source.close().catch(() => undefined);
    this.#wake();
  }

  /** The invocation is over: release the source. */
  stop(): void {
    this.#terminalAcked = true;
    void this.#source.close().catch(() => undefined);
    this.#settle();
    this.#wake();
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      while (this.#terminal === undefined && !this.#terminalAcked) {
        // Room in the unacknowledged window, and a connection that is taking what it is given: a
        // source is not read ahead of the network (its items would wait as queued frames).
        if (this.#unackedBytes >= this.#maxUnackedBytes || this.#link?.congested?.(this.#wakeOnDrain) === true) {
          await new Promise<void>((resolve) => (this.#wakePump = resolve));
          this.#turn.reset();
          continue;
        }
        if (this.#turn.spent) {
          await nextTurn();
          this.#turn.reset();
          continue;
        }
        // A source that never waits (an array, a generator) hands its item over without a promise.
        const source = this.#source;
        const result = source.nextNow === undefined ? await source.next() : source.nextNow();
        if (this.#terminal !== undefined || this.#terminalAcked) break;
        if (result.done) {
          this.#terminal = { kind: "end" };
          this.#sendTerminal();
          break;
        }
        const element = this.binding.element;
        const before = this.#unackedBytes;
        if (element === "value") this.#enqueueValue(result.value, this.#values as PendingValues);
        else for (const entry of this.#byteEntries(element, result.value)) this.#enqueue(entry);
        this.#turn.spend(this.#unackedBytes - before);
      }
    } catch (error) {
      if (this.#terminal === undefined && !this.#terminalAcked) {
        this.binding.recordFailure(error);
        this.#host.onSourceFailure(this.binding, error);
        this.#terminal = { kind: "cancel", reason: "source-unavailable" };
        void this.#source.close().catch(() => undefined);
        this.#sendTerminal();
      }
    }
  }

  /** Sends `entry` and keeps it until it is acknowledged. */
  #enqueue(entry: Pending): void {
    this.#pending.push(entry);
    this.#unackedBytes += chargeOf(entry);
    this.#nextSequence = entry.sequence + countOf(entry);
    this.#send(entry);
  }

  /** A `stream<u8>` or `stream<binary>` source's item as the entries it is sent as. */
  #byteEntries(element: "u8" | "binary", item: unknown): Pending[] {
    // Its index among the source's items (a u8 stream's sequence counts bytes), for a refusal.
    const index = this.#itemsTaken++;
    const place = this.binding.place;
    const named = `${place === undefined ? "" : `${place}: `}item ${index}`;
    switch (element) {
      case "u8": {
        const bytes = toBytes(item, named);
        const out: Pending[] = [];
        let sequence = this.#nextSequence;
        for (let at = 0; at < bytes.byteLength; at += LIMITS.maxPackedU8PayloadBytes) {
          const payload = bytes.subarray(at, at + LIMITS.maxPackedU8PayloadBytes);
          out.push({ kind: "u8", sequence, payload });
          sequence += BigInt(payload.byteLength);
        }
        return out;
      }
      case "binary": {
        if (!isByteChunk(item) && (typeof item !== "object" || item === null || !("bytes" in item))) {
          throw new ClientError("invalid-argument", `${named}: expected bytes, a { bytes, mimeType } or a Blob, got ${describeJs(item)}`);
        }
        const blob: BinaryBlob = isByteChunk(item) ? { bytes: toBytes(item, named) } : (item as BinaryBlob);
        const payload = toBytes(blob.bytes, `${named}: bytes`);
        if (payload.byteLength > LIMITS.maxBinaryPayloadBytes) {
          throw new ClientError(
            "invalid-argument",
            `a binary item of ${payload.byteLength} bytes exceeds ${LIMITS.maxBinaryPayloadBytes}`,
            { code: "limit-exceeded" },
          );
        }
        const mimeType = blob.mimeType ?? this.binding.mimeType;
        // Checked here, as a value item is encoded here: refused later by the encoder, the item
        // would already be kept for a resend, and every reconnect would fail on it again.
        if (mimeType !== undefined && !isMimeType(mimeType)) {
          throw new ClientError(
            "invalid-argument",
            `binary item ${this.#nextSequence} has a mimeType that is not a MIME type (type/subtype)`,
            {
              code: "invalid-message",
            },
          );
        }
        return [{ kind: "binary", sequence: this.#nextSequence, payload, ...(mimeType === undefined ? {} : { mimeType }) }];
      }
    }
  }

  /** Sends a value stream's next item and keeps it until it is acknowledged. */
  #enqueueValue(item: unknown, values: PendingValues): void {
    const value = this.#host.freezeValue(this.binding, item);
    const sequence = this.#nextSequence;
    // Encoding once here both charges the exact wire size and rejects a malformed item as the
    // source's failure now, rather than as a send error on some later reconnect. The
    // transport reuses this encoding of the value (item-encoding.ts).
    let text: string;
    try {
      text = checkInputItem(1, sequence, value);
    } catch (cause) {
      throw new ClientError("invalid-argument", `input item ${sequence} is not a valid SchemaValue`, {
        code: "invalid-message",
        cause,
      });
    }
    const charge = checkedItemLength(1, sequence, text);
    values.push(text, charge);
    this.#unackedBytes += charge;
    this.#nextSequence = sequence + 1n;
    this.#sendValue(sequence, text);
  }

  #send(entry: Pending): void {
    const link = this.#link;
    if (link === undefined) return;
    const { channel } = link;
    switch (entry.kind) {
      case "u8":
        link.send({ type: "input-u8", channel, sequence: entry.sequence, payload: entry.payload });
        return;
      case "binary":
        link.send({
          type: "input-binary",
          channel,
          sequence: entry.sequence,
          payload: entry.payload,
          ...(entry.mimeType === undefined ? {} : { mimeType: entry.mimeType }),
        });
        return;
    }
  }

  #sendValue(sequence: bigint, text: string): void {
    this.#link?.send(new CheckedInputItem(this.#link.channel, sequence, text));
  }

  #sendTerminal(): void {
    const link = this.#link;
    const terminal = this.#terminal;
    if (link === undefined || terminal === undefined || this.#terminalAcked) return;
    if (terminal.kind === "end") link.send({ type: "inputStreamEnd", channel: link.channel, sequence: this.#nextSequence });
    else link.send({ type: "streamCancel", channel: link.channel, reason: terminal.reason });
    this.#terminalSentHere = true;
  }

  /** One function per feeder: a connection keeps each once however often it is asked while congested. */
  readonly #wakeOnDrain = (): void => this.#wake();

  #wake(): void {
    const wake = this.#wakePump;
    this.#wakePump = undefined;
    wake?.();
  }
}

/**
 * What a kept entry counts against the unacknowledged window: its payload and the memory of the
 * entry itself. Counted by payload alone, empty binary items cost nothing and a source of 1-byte
 * chunks kept millions of entries within an 8 MiB window (gigabytes of heap).
 */
const ENTRY_OVERHEAD_BYTES = 64;

function chargeOf(entry: Pending): number {
  return entry.payload.byteLength + ENTRY_OVERHEAD_BYTES;
}
