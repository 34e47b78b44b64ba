/**
 * Memory for the envelopes of large binary messages, reused once the socket
 * is done with them: an `EnvelopeAllocator` with a bounded free list. Pure
 * memory bookkeeping; the transport that owns a pool decides when an envelope
 * is done (its send callback) and calls `release`.
 *
 * Why: a fresh 1 MiB envelope per batch cost a sender about half a
 * millisecond per MiB (allocation, first-touch page faults, and the external
 * memory that drives the collector), as much as a client's masking; a reused
 * one costs a copy. (`ws` masks a client's frame into a buffer of its own;
 * a server's frame is written from the envelope itself.)
 *
 * Small envelopes are not pooled: they come from the runtime's allocator
 * and cost little.
 */
import type { EncodeOptions } from "./encode.js";
import { wrongArgument } from "./errors.js";
import { KiB } from "./limits.js";
import { isBytes } from "./utf8.js";

/** Envelopes shorter than this are allocated as before. */
const MIN_POOLED_BYTES = 64 * KiB;
/** Capacities are rounded up to this, so batches of slightly different sizes share buffers. */
const CAPACITY_STEP = 64 * KiB;

/** Every method refuses an argument of the wrong type as the caller's bug, `ProtocolError` `internal-error`. */
export class EnvelopePool {
  readonly #maxIdleBytes: number;
  readonly #idle: Uint8Array[] = [];
  #idleBytes = 0;
  /** The memory this pool handed out and may take back. */
  readonly #ours = new WeakSet<ArrayBufferLike>();

  /** `maxIdleBytes`: the most memory kept between sends; 0 turns pooling off. */
  constructor(maxIdleBytes: number) {
    if (!isCount(maxIdleBytes)) throw wrongArgument("new EnvelopePool", "maxIdleBytes", "a non-negative integer");
    this.#maxIdleBytes = maxIdleBytes;
  }

  /** An `EnvelopeAllocator`: memory for `byteLength` bytes, not zeroed (the encoder writes every byte). */
  readonly allocate = (byteLength: number): Uint8Array => {
    if (!isCount(byteLength)) throw wrongArgument("EnvelopePool allocate", "byteLength", "a non-negative integer");
    if (byteLength < MIN_POOLED_BYTES || this.#maxIdleBytes === 0) return new Uint8Array(byteLength);
    const index = this.#smallestFitting(byteLength);
    if (index >= 0) {
      const [buffer] = this.#idle.splice(index, 1) as [Uint8Array];
      this.#idleBytes -= buffer.byteLength;
      return buffer.subarray(0, byteLength);
    }
    const capacity = Math.ceil(byteLength / CAPACITY_STEP) * CAPACITY_STEP;
    // Zeroed once, on creation; a reused buffer is never zeroed again.
    const buffer = new Uint8Array(capacity);
    this.#ours.add(buffer.buffer);
    return buffer.subarray(0, byteLength);
  };

  /** Takes back what `allocate` gave once nothing reads it any more; anything else is ignored. */
  release(envelope: Uint8Array): void {
    if (!isBytes(envelope)) throw wrongArgument("EnvelopePool release", "envelope", "a Uint8Array");
    const memory = envelope.buffer;
    if (!this.#ours.has(memory)) return;
    if (this.#idleBytes + memory.byteLength > this.#maxIdleBytes) {
      this.#ours.delete(memory);
      return;
    }
    // Released twice (a bug elsewhere) would hand one buffer to two sends: refuse the second.
    if (this.#idle.some((buffer) => buffer.buffer === memory)) return;
    this.#idle.push(new Uint8Array(memory));
    this.#idleBytes += memory.byteLength;
  }

  /** Whether `envelope` is memory of this pool (its send must call `release`). */
  owns(envelope: Uint8Array): boolean {
    if (!isBytes(envelope)) throw wrongArgument("EnvelopePool owns", "envelope", "a Uint8Array");
    return this.#ours.has(envelope.buffer);
  }

  /** The encoders' options that write envelopes into this pool's memory (`encodeClientMessage(m, pool.encodeOptions)`). */
  readonly encodeOptions: EncodeOptions = { allocate: this.allocate };

  /**
   * The callback for the send that writes `data`: it returns the envelope's
   * memory to the pool, so it must run only once the socket is done with the
   * bytes (`ws` calls a send's callback after the write, or its failure).
   * `undefined` for data that is not this pool's (a text message, a small envelope).
   */
  whenWritten(data: string | Uint8Array): (() => void) | undefined {
    if (typeof data === "string") return undefined;
    if (!isBytes(data)) throw wrongArgument("EnvelopePool whenWritten", "data", "a string or a Uint8Array");
    if (!this.owns(data)) return undefined;
    return () => this.release(data);
  }

  /** Bytes kept for reuse right now. */
  get idleBytes(): number {
    return this.#idleBytes;
  }

  #smallestFitting(byteLength: number): number {
    let best = -1;
    for (let i = 0; i < this.#idle.length; i++) {
      const capacity = (this.#idle[i] as Uint8Array).byteLength;
      if (capacity >= byteLength && (best < 0 || capacity < (this.#idle[best] as Uint8Array).byteLength)) best = i;
    }
    return best;
  }
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
