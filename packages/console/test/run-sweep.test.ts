/**
 * Which stored runs a starting page sweeps (orphans), as a table of records and what the browser
 * knows of open tabs; then the sweep itself on an in-memory IndexedDB with in-memory Web Locks.
 */
import "fake-indexeddb/auto";
import { afterEach, describe, expect, it } from "vitest";
import { holdRun, releaseRun } from "../src/web/run-lock.js";
import { deleteRuns, listRuns, saveRun, type RunRecord } from "../src/web/run-store.js";
import { orphans, sweepOrphans, SWEEP_DEFAULTS, type SweepPolicy } from "../src/web/run-sweep.js";
import { FakeLocks, installLocks } from "./support/fake-locks.js";

const NOW = 1_000_000_000_000;
const HOUR = 60 * 60 * 1000;
const STATE = { sessionToken: "gai1_x", outputCursors: [], selector: {}, idempotencyKey: "k" };

const stored = (id: string, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id,
  title: id,
  state: STATE,
  cursors: {},
  streams: {},
  touchedAt: NOW - HOUR,
  ...over,
});

const policy = (over: Partial<SweepPolicy> = {}): SweepPolicy => ({ now: NOW, current: undefined, held: new Set(), ...over });

describe("orphans", () => {
  it("sweeps a run no tab holds, and says why", () => {
    expect(orphans([stored("gone")], policy())).toEqual([{ id: "gone", reason: "abandoned" }]);
  });

  it("keeps the tab's own run, a run another tab holds, and one written within the grace period", () => {
    const records = [stored("mine"), stored("theirs"), stored("reloading", { touchedAt: NOW - SWEEP_DEFAULTS.graceMs + 1 })];
    expect(orphans(records, policy({ current: "mine", held: new Set(["theirs"]) }))).toEqual([]);
  });

  it("sweeps a run just past the grace period, and honours a grace period of its own", () => {
    expect(orphans([stored("a", { touchedAt: NOW - SWEEP_DEFAULTS.graceMs })], policy())).toHaveLength(1);
    expect(orphans([stored("a", { touchedAt: NOW - 10 })], policy({ graceMs: 10 }))).toHaveLength(1);
    expect(orphans([stored("a", { touchedAt: NOW - 9 })], policy({ graceMs: 10 }))).toEqual([]);
  });

  it("tells finished, never-started and unreadable records apart from abandoned ones", () => {
    const records = [
      stored("finished", { outcome: { ok: true, text: "success" } }),
      stored("never-started", { state: undefined }),
      { id: "other-version", whatever: true },
      { id: 42, streams: {}, cursors: {} },
      stored("no-stamp", { touchedAt: undefined }),
    ];
    expect(orphans(records, policy())).toEqual([
      { id: "finished", reason: "finished" },
      { id: "never-started", reason: "unknown" },
      { id: "other-version", reason: "unknown" },
      { id: 42, reason: "unknown" },
      // Written before records were stamped: as old as can be.
      { id: "no-stamp", reason: "expired" },
    ]);
  });

  it("ignores what is not a record at all", () => {
    expect(orphans([null, "text", 3, { title: "no id" }], policy())).toEqual([]);
  });

  it("without Web Locks, keeps an open run until its retention has passed, and still sweeps finished ones", () => {
    const records = [
      stored("quiet", { touchedAt: NOW - 23 * HOUR }),
      stored("expired", { touchedAt: NOW - 24 * HOUR }),
      stored("finished", { outcome: { ok: false, text: "x" } }),
    ];
    expect(orphans(records, policy({ held: undefined }))).toEqual([
      { id: "expired", reason: "expired" },
      { id: "finished", reason: "finished" },
    ]);
    expect(orphans([stored("short", { touchedAt: NOW - 2 * HOUR })], policy({ held: undefined, retentionMs: HOUR }))).toEqual([
      { id: "short", reason: "expired" },
    ]);
  });

  it("an expired run counts as expired where locks are known too", () => {
    expect(orphans([stored("old", { touchedAt: NOW - 48 * HOUR })], policy())).toEqual([{ id: "old", reason: "expired" }]);
  });
});

describe("sweepOrphans", () => {
  const record = (id: string): RunRecord => ({ id, title: id, state: STATE as never, cursors: {}, streams: {} });

  afterEach(async () => {
    await deleteRuns((await listRuns()).map((r) => (r as RunRecord).id));
    installLocks(undefined);
  });

  it("removes the runs no tab holds once the grace period is over, and keeps the held and the current one", async () => {
    const locks = installLocks(new FakeLocks());
    // Ids of this file alone: the unit files share one IndexedDB (isolate: false).
    for (const id of ["sweep-mine", "sweep-held", "sweep-gone"]) await saveRun(record(id));
    holdRun("sweep-held");
    // Written just now: within the grace period, nothing is swept.
    expect(await sweepOrphans("sweep-mine")).toEqual([]);
    expect(await sweepOrphans("sweep-mine", Date.now() + SWEEP_DEFAULTS.graceMs)).toEqual([{ id: "sweep-gone", reason: "abandoned" }]);
    expect((await listRuns()).map((r) => (r as RunRecord).id).sort()).toEqual(["sweep-held", "sweep-mine"]);
    releaseRun("sweep-held");
    await locks.released("golem-stream-console:run:sweep-held");
  });
});
