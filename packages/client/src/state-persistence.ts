/**
 * The persistence side of a session: runs the caller's `onCheckpoint` with
 * the full current state, one call at a time and in order, and turns a
 * failure into one typed error that stops everything (docs/protocol/client.md
 * §2). Without a callback nothing is computed at all.
 */
import type { ResumeState } from "./checkpoint.js";
import { ClientError } from "./errors.js";

export type PersistCallback = (state: ResumeState) => Promise<void> | void;

export class StatePersistence {
  readonly #persist: PersistCallback | undefined;
  readonly #currentState: () => ResumeState | undefined;
  readonly #onFailure: (error: ClientError) => void;
  #chain: Promise<void> = Promise.resolve();
  #failure: ClientError | undefined;

  /**
   * `currentState` is read when a save is requested (the state at that
   * moment is what gets saved); `onFailure` runs once, on the first failure.
   */
  constructor(persist: PersistCallback | undefined, currentState: () => ResumeState | undefined, onFailure: (error: ClientError) => void) {
    this.#persist = persist;
    this.#currentState = currentState;
    this.#onFailure = onFailure;
  }

  /** Set once the callback failed: nothing more is saved (or delivered). */
  get failure(): ClientError | undefined {
    return this.#failure;
  }

  /** Saves the current state after every save requested before. Never rejects. */
  save(): Promise<void> {
    const persist = this.#persist;
    if (persist === undefined || this.#failure !== undefined) return this.#chain;
    const state = this.#currentState();
    if (state === undefined) return this.#chain;
    this.#chain = this.#chain
      .then(() => (this.#failure === undefined ? persist(state) : undefined))
      .catch((cause: unknown) => this.#failed(cause));
    return this.#chain;
  }

  /**
   * For a stream that retained a cursor: resolves once it is saved, rejects with the failure if
   * it cannot be. Without a callback nothing is saved, so there is nothing to wait for:
   * `undefined`, not a promise per delivered item.
   */
  commit(): Promise<void> | undefined {
    if (this.#persist === undefined) return undefined;
    return this.#committed();
  }

  async #committed(): Promise<void> {
    await this.save();
    if (this.#failure !== undefined) throw this.#failure;
  }

  #failed(cause: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = new ClientError(
      "checkpoint-failed",
      `the onCheckpoint callback failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
    this.#onFailure(this.#failure);
  }
}
