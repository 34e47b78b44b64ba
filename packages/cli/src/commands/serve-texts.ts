/**
 * The lines `serve` prints about itself that are worded from its settings
 * and outcomes: durations, the catalogue a cluster node compares, what a
 * drain did.
 */

/** What became of the invocations this node ran, for the line a drained node prints. */
export function drainOutcome(failed: number, handedOver: number): string {
  if (failed === 0 && handedOver === 0) return "every invocation this node ran has finished";
  const invocations = (n: number) => `${n} invocation${n === 1 ? "" : "s"}`;
  const parts = [];
  if (handedOver > 0) parts.push(`${invocations(handedOver)} still running at the deadline left to other nodes to run again`);
  if (failed > 0) parts.push(`${invocations(failed)} still running at the deadline failed (not replayable)`);
  return parts.join(", ");
}

/** The banner's line on the catalogue a cluster node checks the others against. */
export function catalogueLine(fingerprint: string | undefined, allowDrift: boolean): string {
  if (fingerprint === undefined) return "catalogue of an agent host of its own: not compared with the other nodes'";
  const rule = allowDrift
    ? "other nodes may serve another catalogue: --allow-catalogue-drift"
    : "every node of the cluster must serve the same";
  return `catalogue ${fingerprint.slice(0, 12)} (${rule})`;
}

/** 30000 → `30s`, 1500 → `1.5s`, 250 → `250ms`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms % 60_000 === 0 && ms >= 60_000) return `${ms / 60_000}m`;
  return `${Math.round(ms / 100) / 10}s`;
}
