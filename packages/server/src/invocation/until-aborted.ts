/**
 * What an agent's promise settles to, or `ABORTED` as soon as the invocation's signal aborts,
 * whichever comes first. The invocation is over for this node once its signal aborts (a failure
 * recorded, a give-up, another node's claim, a shutdown): the run stops waiting for an agent that
 * may never settle, so that its principal's running slot and its memory are let go. The agent's
 * code cannot be stopped; its later answer, or its rejection, is dropped.
 */
export const ABORTED: unique symbol = Symbol("aborted");

export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(ABORTED);
  }
  return new Promise<T | typeof ABORTED>((resolve, reject) => {
    const onAbort = (): void => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        // After an abort the promise above has settled: a rejection here is the dropped answer.
        reject(error);
      },
    );
  });
}
