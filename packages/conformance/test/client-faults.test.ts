/**
 * The client suite's teeth: the adapter of @golem-stream/client with one
 * fault at a time (test/support/client-faults.mjs, each wrapping the client's
 * Transport) must fail at least the scenarios named here; through the same
 * wrapper without a fault, every scenario passes — so a failure is the
 * fault's, not the wrapper's.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { clientScenarios, runClientSuite } from "../src/index.js";
// @ts-expect-error -- plain JavaScript (the adapter runs under plain Node), without declarations
import { CLIENT_FAULTS } from "./support/client-faults.mjs";
import { LOADED_CHECK_TIMEOUT_MS } from "./support/timeouts.js";

const FAULTY_ADAPTER = fileURLToPath(new URL("./support/faulty-client-adapter.mjs", import.meta.url));
const adapterWith = (fault: string): string => `node "${FAULTY_ADAPTER}" ${fault}`;

/** Each fault and the scenarios that must catch it. */
const CAUGHT_BY: Record<string, readonly string[]> = {
  "cursor-before-delivery": [
    "outputs.cursor-after-delivery",
    "outputs.no-cursor-before-delivery",
    "bytes.u8-batch-cursor-and-overlap",
    "bytes.binary-items-replay",
    "outputs.nested-streams",
  ],
  "no-suffix-resend": [
    "inputs.suffix-resend-after-high-water",
    "inputs.high-water-beyond-last-ack",
    "inputs.high-water-zero",
    "bytes.u8-suffix-resend-inside-batch",
  ],
  "off-by-one-dedup": [
    "outputs.replay-below-cursor",
    "outputs.replay-of-cursor-item",
    "outputs.replay-of-received-undelivered",
    "bytes.binary-items-replay",
    "outputs.nested-streams",
  ],
  "new-attempt-on-retry": [
    "attempts.exact-retry-after-cut",
    "attempts.exact-retry-after-stall",
    "attempts.exact-retry-of-resume",
    "lifecycle.revoked-after-replayed-acceptance",
    "lifecycle.lost-server",
  ],
  "skip-item": ["outputs.in-order-once", "outputs.replay-below-cursor"],
  "lenient-channels": ["violations.unknown-channel", "violations.premature-item"],
  "ignore-channel-rebinding": ["violations.channel-mapped-twice"],
  "ignore-high-water": ["inputs.suffix-resend-after-high-water", "inputs.high-water-beyond-last-ack", "inputs.terminal-high-water"],
  "stale-session-token": ["attempts.refreshed-session-token"],
  "retry-violations": ["violations.malformed-text-message", "violations.malformed-json", "violations.malformed-binary-envelope"],
  "ignore-revocation": ["lifecycle.revoked", "takeover.revoked-after-resume", "takeover.replaced-by-another-process"],
  "checkpoint-before-delivery": ["restart.resume-from-checkpoint", "takeover.replaced-by-another-process"],
  "refrozen-pending-start": ["restart.pending-start-exact-retry"],
  "keep-orphaned-inputs": ["restart.input-source-left-behind"],
  "unbounded-buffering": ["backpressure.stalled-reader"],
  "reuse-rejected-start": ["attempts.fresh-start-after-retryable-rejection"],
  "retry-refused-handshake": ["handshake.refused-unauthenticated"],
};

describe("faulty variants of @golem-stream/client", () => {
  it("the table covers every fault of client-faults.mjs, and names only real scenarios", () => {
    expect(Object.keys(CAUGHT_BY).sort()).toEqual(
      Object.keys(CLIENT_FAULTS as object)
        .filter((f) => f !== "none")
        .sort(),
    );
    const ids = new Set(clientScenarios().map((s) => s.id));
    for (const names of Object.values(CAUGHT_BY)) for (const name of names) expect(ids, name).toContain(name);
  });

  it("through the fault wrapper without a fault, every scenario passes", async () => {
    const report = await runClientSuite({ adapter: adapterWith("none"), concurrency: 3, checkTimeoutMs: LOADED_CHECK_TIMEOUT_MS });
    expect(report.results.filter((r) => r.status !== "passed").map((r) => `${r.id}: ${r.saw}`)).toEqual([]);
  }, 360_000);

  for (const [fault, scenarios] of Object.entries(CAUGHT_BY)) {
    it(`${fault} fails ${scenarios.join(", ")}`, async () => {
      // A fault that makes the client wait forever is caught by the suite's timeout: keep it short.
      const report = await runClientSuite({ adapter: adapterWith(fault), only: [...scenarios], timeoutMs: 3000, concurrency: 3 });
      expect(report.results.filter((r) => r.status !== "failed").map((r) => `${r.id} ${r.status}: ${r.saw}`)).toEqual([]);
    }, 120_000);
  }
});
