/**
 * Which runs open tabs show, across tabs: a tab holds the Web Lock
 * `golem-stream-console:run:<id>` of its run for as long as it shows it
 * (released when the run ends or is discarded, and by the browser when the
 * tab goes). The sweep (run-sweep.ts) keeps every run whose lock is held or
 * awaited. Web Locks exist in secure contexts only (https, loopback); where
 * they do not, nothing is held and `heldRuns` says it cannot tell.
 */
const PREFIX = "golem-stream-console:run:";

const releases = new Map<string, () => void>();

/** Holds the run's lock from now on (again: nothing more). */
export function holdRun(id: string): void {
  const locks = globalThis.navigator?.locks;
  if (locks === undefined || releases.has(id)) return;
  const released = new Promise<void>((resolve) => releases.set(id, resolve));
  // Shared: a duplicated tab shows the same run, and holds it too.
  void locks.request(`${PREFIX}${id}`, { mode: "shared" }, () => released).catch(() => undefined);
}

/** Lets go of the run's lock, if this page holds it. */
export function releaseRun(id: string): void {
  releases.get(id)?.();
  releases.delete(id);
}

/** Runs whose lock some tab of this origin holds or awaits; `undefined` without Web Locks. */
export async function heldRuns(): Promise<Set<string> | undefined> {
  const locks = globalThis.navigator?.locks;
  if (locks === undefined) return undefined;
  const snapshot = await locks.query();
  const names = [...(snapshot.held ?? []), ...(snapshot.pending ?? [])].map((lock) => lock.name ?? "");
  return new Set(names.filter((name) => name.startsWith(PREFIX)).map((name) => name.slice(PREFIX.length)));
}
