/**
 * The SQLite group commit through transient errors (group-commit.ts, sqlite-errors.ts), with a
 * stand-in for the transaction and a clock the test moves: a group that failed busy or with an
 * I/O error is committed again, in order, before the writes issued meanwhile; past the grace
 * its writes fail; a full disk fails at once.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteSessionStore } from "../src/store/sqlite-store.js";
import { GroupCommit, runWrite, type CommitGroup } from "../src/store/group-commit.js";
import { OutageGrace, type StoreOutageEvent } from "../src/store/outage-grace.js";
import type { PayloadFiles } from "../src/store/payload-files.js";

const noPayloads = {} as PayloadFiles; // no write here has a payload
const sqliteError = (code: string): Error => Object.assign(new Error(code), { code });

/**
 * A transaction that throws `failures` (in order, one per attempt) before it commits; each
 * attempt records which writes it ran, and only a committed attempt's writes count.
 */
function flakyTransaction(failures: Error[]): { commitGroup: CommitGroup; committed: unknown[]; attempts: () => number } {
  const committed: unknown[] = [];
  let attempts = 0;
  const commitGroup: CommitGroup = (batch, outcomes) => {
    attempts++;
    const ran = batch.map((item, i) => (outcomes[i] = runWrite(item)));
    const failure = failures.shift();
    if (failure !== undefined) throw failure; // rolled back: nothing of it stays
    committed.push(...ran.map((outcome) => (outcome.ok ? outcome.value : "failed")));
  };
  return { commitGroup, committed, attempts: () => attempts };
}

function steppingGrace(graceMs: number): { grace: OutageGrace; events: StoreOutageEvent[]; time: () => number } {
  let time = 0;
  const events: StoreOutageEvent[] = [];
  const clock = { now: () => time, sleep: async (ms: number) => void (time += ms) };
  return { grace: new OutageGrace(graceMs, clock, () => (event) => events.push(event)), events, time: () => time };
}

describe("GroupCommit through transient SQLite errors", () => {
  it("a group that failed busy, then with an I/O error, is committed again, in order, before the writes issued meanwhile", async () => {
    const { commitGroup, committed, attempts } = flakyTransaction([sqliteError("SQLITE_BUSY"), sqliteError("SQLITE_IOERR_WRITE")]);
    const { grace, events } = steppingGrace(6000);
    const group = new GroupCommit(commitGroup, noPayloads, undefined, grace);
    const first = [group.write(() => "a"), group.write(() => "b")];
    // Issued while the first group is being retried: it must wait for it.
    await new Promise((resolve) => setImmediate(resolve));
    const later = group.write(() => "c");
    expect(await Promise.all([...first, later])).toEqual(["a", "b", "c"]);
    expect(committed).toEqual(["a", "b", "c"]);
    expect(attempts()).toBe(4);
    expect(events.map((e) => e.kind)).toEqual(["unavailable", "retry", "retry", "available"]);
  });

  it("a write that fails busy inside the group takes the whole group back, not only itself", async () => {
    let busy = true;
    const { commitGroup, committed } = flakyTransaction([]);
    const { grace } = steppingGrace(6000);
    const group = new GroupCommit(commitGroup, noPayloads, undefined, grace);
    const writes = [
      group.write(() => "a"),
      group.write(() => {
        if (busy) {
          busy = false;
          throw sqliteError("SQLITE_BUSY");
        }
        return "b";
      }),
      group.write(() => "c"),
    ];
    expect(await Promise.all(writes)).toEqual(["a", "b", "c"]);
    expect(committed).toEqual(["a", "b", "c"]);
  });

  it("past the grace the group's writes fail with the error, reported once with their number", async () => {
    const { commitGroup } = flakyTransaction(Array.from({ length: 100 }, () => sqliteError("SQLITE_BUSY")));
    const { grace, events, time } = steppingGrace(3000);
    const group = new GroupCommit(commitGroup, noPayloads, undefined, grace);
    const results = await Promise.allSettled([group.write(() => "a"), group.write(() => "b")]);
    expect(results.map((r) => (r as PromiseRejectedResult).reason?.code)).toEqual(["SQLITE_BUSY", "SQLITE_BUSY"]);
    expect(time()).toBe(3000);
    expect(events.filter((e) => e.kind === "grace-exceeded")).toEqual([
      { kind: "grace-exceeded", seconds: 3, writes: 2, error: "SQLITE_BUSY" },
    ]);
  });

  it("a full disk is not retried: the group fails at once", async () => {
    const { commitGroup, attempts } = flakyTransaction([sqliteError("SQLITE_FULL")]);
    const { grace, events } = steppingGrace(6000);
    const group = new GroupCommit(commitGroup, noPayloads, undefined, grace);
    await expect(group.write(() => "a")).rejects.toMatchObject({ code: "SQLITE_FULL" });
    expect(attempts()).toBe(1);
    expect(events).toEqual([]);
    expect(await group.write(() => "b")).toBe("b");
  });
});

describe("the SQLite store's outageGraceMs", () => {
  it("is checked before anything is opened", () => {
    const dataDir = join(tmpdir(), `golem-grace-${randomUUID()}`);
    expect(() => new SqliteSessionStore({ dataDir, outageGraceMs: -1 })).toThrow(
      "outageGraceMs must be a non-negative integer of milliseconds, got -1",
    );
    expect(existsSync(dataDir)).toBe(false);
  });
});
