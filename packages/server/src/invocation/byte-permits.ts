/**
 * Session byte permits (protocol section 12): a counting semaphore over bytes.
 *
 * A permit is acquired before a large payload is decoded or copied and
 * released only when its downstream owner has consumed it, so the bytes a
 * session holds in memory never exceed `capacity`. Waiters are served in
 * FIFO order so a large request is not starved by a stream of small ones.
 *
 * `charge` takes bytes without waiting, even past `capacity`: for holders
 * that must not wait on this budget (output a producer has already made,
 * whose release depends only on the client reading it), so that what they
 * hold keeps the waiters (input) out until they release it.
 *
 * Whatever the permits hold in memory is also counted in the node's budget
 * (`node`, node-budget.ts), which never makes anyone wait here; unsent output,
 * which is in the store, is not (`chargeUncounted`).
 */
import { ProtocolError } from "@golem-stream/wire";
import type { NodeBudget } from "./node-budget.js";

interface Waiter {
  readonly bytes: number;
  readonly resolve: () => void;
}

export class BytePermits {
  readonly capacity: number;
  #available: number;
  readonly #waiters: Waiter[] = [];
  readonly #node: NodeBudget | undefined;
  /** Bytes held that the node's budget counts (everything but `chargeUncounted`). */
  #counted = 0;
  #onDrained: (() => void)[] = [];

  constructor(capacity: number, node?: NodeBudget) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0) {
      throw new RangeError("byte permit capacity must be a positive safe integer");
    }
    this.capacity = capacity;
    this.#available = capacity;
    this.#node = node;
  }

  get available(): number {
    return this.#available;
  }

  /** Bytes currently held by owners that have not released them (more than `capacity` after a `charge`). */
  get held(): number {
    return this.capacity - this.#available;
  }

  /** The part of `held` that the node's budget counts: bytes in memory. */
  get countedHeld(): number {
    return this.#counted;
  }

  /** Calls `listener` once, the next time `countedHeld` falls to 0 (at once if it is 0). */
  onceDrained(listener: () => void): void {
    if (this.#counted === 0) listener();
    else this.#onDrained.push(listener);
  }

  /** Takes `bytes` at once, past the capacity if need be (see the file comment); released with `release`. */
  charge(bytes: number): void {
    this.#check(bytes);
    this.#take(bytes);
  }

  /**
   * `charge` for bytes that are not in memory: output recorded in the store
   * and not yet sent, which keeps this session's input out (section 12) but
   * is read back from the store in bounded batches. Not counted in the node's
   * budget: clients that stop reading would otherwise spend it and stop
   * every socket of the node. Released with `releaseUncounted`.
   */
  chargeUncounted(bytes: number): void {
    this.#check(bytes);
    this.#available -= bytes;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Takes `bytes` now if possible, without waiting and without queue-jumping. */
  tryAcquire(bytes: number): boolean {
    this.#check(bytes);
    if (this.#waiters.length === 0 && bytes <= this.#available) {
      this.#take(bytes);
      return true;
    }
    return false;
  }

  /**
   * Resolves `true` once `bytes` are held by the caller, or `false`, holding
   * nothing, if `signal` aborts first: a waiter whose connection closed must
   * not keep the waiters behind it (another connection's) out of the FIFO.
   */
  acquire(bytes: number, signal?: AbortSignal): Promise<boolean> {
    if (this.tryAcquire(bytes)) return Promise.resolve(true);
    if (signal?.aborted === true) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const abandon = (): void => {
        const index = this.#waiters.indexOf(waiter);
        if (index < 0) return;
        this.#waiters.splice(index, 1);
        resolve(false);
        this.#serveWaiters(); // the next one may fit now
      };
      const waiter: Waiter = {
        bytes,
        resolve: () => {
          signal?.removeEventListener("abort", abandon);
          resolve(true);
        },
      };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", abandon, { once: true });
    });
  }

  release(bytes: number): void {
    if (bytes > this.#counted) throw new RangeError("released more counted byte permits than were held");
    this.#give(bytes);
    this.#counted -= bytes;
    this.#node?.release(bytes);
    if (this.#counted === 0 && this.#onDrained.length > 0) for (const listener of this.#onDrained.splice(0)) listener();
  }

  /** Gives back bytes taken with `chargeUncounted`. */
  releaseUncounted(bytes: number): void {
    if (bytes > this.held - this.#counted) throw new RangeError("released more uncounted byte permits than were held");
    this.#give(bytes);
  }

  #give(bytes: number): void {
    this.#check(bytes);
    if (bytes > this.held) throw new RangeError("released more byte permits than were held");
    this.#available += bytes;
    this.#serveWaiters();
  }

  /**
   * Waiters are charged to the node before it hears of the release, so a release that
   * only passes bytes on to the next waiter never looks like relief to the node.
   */
  #serveWaiters(): void {
    while (this.#waiters.length > 0) {
      const next = this.#waiters[0]!;
      if (next.bytes > this.#available) break;
      this.#waiters.shift();
      this.#take(next.bytes);
      next.resolve();
    }
  }

  #take(bytes: number): void {
    this.#available -= bytes;
    this.#counted += bytes;
    this.#node?.charge(bytes);
  }

  #check(bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new RangeError("byte permit size must be a non-negative safe integer");
    }
    if (bytes > this.capacity) {
      // A single payload larger than the whole session budget can never be
      // admitted; waiting would deadlock, so it is a limit violation.
      throw new ProtocolError("limit-exceeded", "payload exceeds the session byte budget");
    }
  }
}
