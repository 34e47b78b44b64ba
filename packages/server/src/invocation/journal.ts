/**
 * The journal of one run of an invocation (docs/durable-execution.md):
 * `ctx.step`, `ctx.now` and `ctx.random` of a replayable method store their
 * outcome before returning it, and a re-run returns the stored outcome at
 * the same position without running the step again.
 *
 * Positions are taken when the method calls, not when the step finishes:
 * two steps started together keep their order on a re-run whichever
 * finishes first.
 */
import { canonicalJson, type JsonValue } from "@golem-stream/wire";
import type { JournalEntry } from "../store/session-store.js";
import { ReplayDivergence } from "./replay-divergence.js";
import { errorText } from "../error-text.js";

/** Where entries go; undefined for a method that is not replayable (steps just run). */
export interface JournalStore {
  append(entry: JournalEntry): Promise<void>;
}

/** The stored form of a step's outcome. */
type StepOutcome = { readonly value?: JsonValue } | { readonly error: { readonly name: string; readonly message: string } };

export class Journal {
  readonly #sessionId: string;
  readonly #store: JournalStore | undefined;
  /** Entries of earlier runs, by position (empty on a first run). */
  readonly #stored: ReadonlyMap<number, JournalEntry>;
  /** Told of non-determinism (the method may catch the step's rejection; the invocation fails all the same). */
  readonly #diverged: (divergence: ReplayDivergence) => void;
  #next = 0;

  constructor(
    sessionId: string,
    store: JournalStore | undefined,
    stored: readonly JournalEntry[] = [],
    diverged: (divergence: ReplayDivergence) => void = () => undefined,
  ) {
    this.#sessionId = sessionId;
    this.#store = store;
    this.#stored = new Map(stored.map((entry) => [entry.position, entry]));
    this.#diverged = diverged;
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    if (typeof name !== "string" || name.length === 0) throw new TypeError("a step needs a non-empty name");
    if (typeof fn !== "function") throw new TypeError("a step needs a function to run");
    if (this.#store === undefined) return await fn();
    const position = this.#next++;
    const stored = this.#stored.get(position);
    if (stored !== undefined) {
      if (stored.name !== name) {
        const divergence = new ReplayDivergence(
          `journal position ${position}: the run before called step ${JSON.stringify(stored.name)}, this one ${JSON.stringify(name)}`,
        );
        this.#diverged(divergence);
        throw divergence;
      }
      return settle<T>(JSON.parse(stored.outcome) as StepOutcome);
    }
    const outcome = await run(fn);
    // Written before anything of it is returned: a crash now runs the step again, never returns a value twice differently.
    const text = canonicalJson(outcome as JsonValue);
    await this.#store.append({ sessionId: this.#sessionId, position, name, outcome: text });
    return settle<T>(JSON.parse(text) as StepOutcome);
  }
}

/** Runs `fn`, its result as JSON gives it back (a value JSON cannot write fails here, before anything is stored). */
async function run<T>(fn: () => T | Promise<T>): Promise<StepOutcome> {
  let value: T;
  try {
    value = await fn();
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(errorText(error));
    return { error: { name: failure.name, message: failure.message } };
  }
  if (value === undefined) return {};
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("a step's result must be a JSON value");
  return { value: JSON.parse(text) as JsonValue };
}

function settle<T>(outcome: StepOutcome): T {
  if ("error" in outcome) {
    const error = new Error(outcome.error.message);
    error.name = outcome.error.name;
    throw error;
  }
  return outcome.value as T;
}
