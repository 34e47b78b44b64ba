/**
 * The listeners of one invocation's events (`Invocation.on`). A listener is the application's
 * code, run from inside the runtime (while a server message is handled, a source is read, a
 * reconnect is planned): what it throws must not pass for the server's fault nor stop the
 * runtime half-way, so each listener runs on its own, the others still run, and what it threw
 * goes to `onListenerError`, which reports it (docs/protocol/client.md §3a).
 */
export class EventListeners<Events> {
  readonly #listeners = new Map<keyof Events, Set<(payload: never) => void>>();
  readonly #onListenerError: (event: keyof Events, error: unknown) => void;

  constructor(onListenerError: (event: keyof Events, error: unknown) => void) {
    this.#onListenerError = onListenerError;
  }

  /** Adds `listener` for `event`; returns a function that removes it. */
  add<E extends keyof Events>(event: E, listener: (payload: Events[E]) => void): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => set.delete(listener as (payload: never) => void);
  }

  /** Calls every listener of `event` with `payload`, each isolated from what the others throw. */
  emit<E extends keyof Events>(event: E, payload: Events[E]): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    // A copy: a listener that removes itself or adds another changes no one's turn in this round.
    for (const listener of [...set]) {
      try {
        (listener as (payload: Events[E]) => void)(payload);
      } catch (error) {
        this.#onListenerError(event, error);
      }
    }
  }
}
