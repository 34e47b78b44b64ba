/** A watcher of watched input writes (`acceptInputWatched`) that records its calls, and resolves `told` at the first. */
import type { InputCommitWatcher } from "../../src/store/index.js";

export function recordingWatcher(): InputCommitWatcher & { readonly calls: (Error | undefined)[]; readonly told: Promise<void> } {
  const calls: (Error | undefined)[] = [];
  let resolve = (): void => undefined;
  const told = new Promise<void>((r) => (resolve = r));
  return {
    calls,
    told,
    inputSettled(error: Error | undefined) {
      calls.push(error);
      resolve();
    },
  };
}
