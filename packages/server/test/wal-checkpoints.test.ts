/**
 * Checkpoints of the SQLite store's WAL (wal-checkpoints.ts): between two
 * group commits, the WAL synced, its pages copied at `synchronous = OFF`,
 * the database synced, and only then the next commit, which may write the
 * WAL from its start again. The group commit's side with controlled
 * checkpoints, so nothing depends on timing; the checkpoint's steps on a
 * real database with controlled syncs; and the store, whose WAL stays
 * bounded by its `checkpointPages`.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteSessionStore } from "../src/index.js";
import { betterSqlite3 } from "../src/store/better-sqlite3.js";
import { GroupCommit, runWrite, type CommitGroup } from "../src/store/group-commit.js";
import type { PayloadFiles } from "../src/store/payload-files.js";
import { CheckpointSyncError, WalCheckpoints, type Checkpoints } from "../src/store/wal-checkpoints.js";
import { removeStoreDirs, session, sqliteDir, startAttempt, stream } from "./support/store-records.js";

afterEach(removeStoreDirs);

const noPayloads = {} as PayloadFiles; // no write here has a payload
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Checkpoints due while `due` says so, each run held until the test settles it. */
function controlledCheckpoints() {
  const runs: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const state = { due: false };
  const checkpoints: Checkpoints = {
    due: () => state.due,
    run: () => new Promise<void>((resolve, reject) => runs.push({ resolve, reject })),
  };
  return { checkpoints, runs, state };
}

/** Commits each group's writes, recording the group's size. */
function recordedCommits(): { commits: number[]; commitGroup: CommitGroup } {
  const commits: number[] = [];
  const commitGroup: CommitGroup = (batch, outcomes) => {
    commits.push(batch.length);
    batch.forEach((item, i) => (outcomes[i] = runWrite(item)));
  };
  return { commits, commitGroup };
}

function outcome(promise: Promise<unknown>): { get: () => string } {
  let state = "pending";
  promise.then(
    () => (state = "resolved"),
    (error: unknown) => (state = `rejected: ${(error as Error).message}`),
  );
  return { get: () => state };
}

describe("the group commit's checkpoints", () => {
  it("a due checkpoint runs between two groups; the next commit waits for it; never two before a commit", async () => {
    const { commits, commitGroup } = recordedCommits();
    const { checkpoints, runs, state } = controlledCheckpoints();
    const group = new GroupCommit(commitGroup, noPayloads, undefined, undefined, checkpoints);
    const first = outcome(group.write(() => 1));
    await turn();
    expect(commits).toEqual([1]);
    expect(first.get()).toBe("resolved");

    state.due = true; // and it stays due: the WAL is long until the next commit starts it again
    const second = outcome(group.write(() => 2));
    const third = outcome(group.write(() => 3));
    await turn();
    expect(runs).toHaveLength(1);
    expect(commits).toEqual([1]); // waiting for the checkpoint
    await turn();
    expect(second.get()).toBe("pending");
    runs[0]!.resolve();
    await turn();
    await turn();
    expect(commits).toEqual([1, 2]); // both as one group, after it, and no second checkpoint first
    expect(runs).toHaveLength(1);
    expect([second.get(), third.get()]).toEqual(["resolved", "resolved"]);

    // After that commit, one that is still due runs again.
    const fourth = outcome(group.write(() => 4));
    await turn();
    expect(runs).toHaveLength(2);
    runs[1]!.reject(new Error("busy")); // a checkpoint that failed otherwise: the commit goes on
    await turn();
    await turn();
    expect(commits).toEqual([1, 2, 1]);
    expect(fourth.get()).toBe("resolved");
  });

  it("a checkpoint whose database sync failed leaves the store taking no writes: each fails with that error", async () => {
    const { commits, commitGroup } = recordedCommits();
    const { checkpoints, runs, state } = controlledCheckpoints();
    const group = new GroupCommit(commitGroup, noPayloads, undefined, undefined, checkpoints);
    state.due = true;
    const waiting = outcome(group.write(() => 1));
    await turn();
    runs[0]!.reject(new CheckpointSyncError("the database file could not be synced after a checkpoint"));
    await turn();
    await turn();
    const later = outcome(group.write(() => 2));
    await turn();
    await turn();
    expect(commits).toEqual([]);
    expect(group.failure).toBeInstanceOf(CheckpointSyncError); // what the store's ping (readiness) reports
    expect(waiting.get()).toMatch(/rejected: the database file could not be synced/);
    expect(later.get()).toMatch(/rejected: the database file could not be synced/);
    await group.drain();
  });
});

describe("WalCheckpoints", () => {
  /** A WAL database as the store opens one, with `rows` rows of 4 KiB written in as many commits. */
  function walDatabase(rows: number) {
    const Sqlite = betterSqlite3();
    const path = join(sqliteDir(), "checkpoint.db");
    const db = new Sqlite(path);
    db.pragma("page_size = 4096");
    db.pragma("locking_mode = EXCLUSIVE");
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("wal_autocheckpoint = 0");
    db.exec("CREATE TABLE t (x BLOB)");
    const insert = db.prepare("INSERT INTO t VALUES (?)");
    for (let i = 0; i < rows; i++) insert.run(Buffer.alloc(4096, i));
    const walLength = (): number => Number((db.pragma("wal_checkpoint(NOOP)") as { log: number }[])[0]!.log);
    return { db, insert, walLength };
  }

  it("is due once the WAL holds its pages; syncs the WAL, copies at synchronous OFF, syncs the database, in that order", async () => {
    const { db, insert, walLength } = walDatabase(20);
    const steps: string[] = [];
    const checkpoints = new WalCheckpoints(
      db,
      async () => {
        steps.push(`wal synced, ${walLength()} pages in the WAL`);
      },
      async () => {
        steps.push(`database synced, synchronous ${String(db.pragma("synchronous", { simple: true }))}`);
      },
      walLength() + 1,
    );
    expect(checkpoints.due()).toBe(false);
    insert.run(Buffer.alloc(4096));
    expect(checkpoints.due()).toBe(true);
    const before = walLength();
    await checkpoints.run();
    // The copy ran between the two syncs (the WAL is still as long; SQLite starts it again at the
    // next commit), and the connection is back at NORMAL before the database sync completes.
    expect(steps).toEqual([`wal synced, ${before} pages in the WAL`, "database synced, synchronous 1"]);
    expect(Number((db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n)).toBe(21);
    insert.run(Buffer.alloc(16));
    expect(walLength()).toBeLessThan(5); // written from its start again
    db.close();
  });

  it("copies nothing and rejects with CheckpointSyncError when the WAL sync fails, and rejects so when the database sync fails", async () => {
    const { db, walLength } = walDatabase(10);
    const failing = async (): Promise<void> => {
      throw new Error("EIO");
    };
    const fine = async (): Promise<void> => undefined;
    await expect(new WalCheckpoints(db, failing, fine, 1).run()).rejects.toBeInstanceOf(CheckpointSyncError);
    db.prepare("INSERT INTO t VALUES (x'00')").run();
    expect(walLength()).toBeGreaterThan(10); // nothing was copied, so the WAL goes on growing
    await expect(new WalCheckpoints(db, fine, failing, 1).run()).rejects.toBeInstanceOf(CheckpointSyncError);
    expect(db.pragma("synchronous", { simple: true })).toBe(1);
    db.close();
  });
});

describe("the SQLite store", () => {
  it("keeps its WAL near checkpointPages: a burst of chunks far larger than it leaves a WAL of about that size, and every chunk", async () => {
    const dataDir = sqliteDir();
    const pages = 16;
    const store = new SqliteSessionStore({ dataDir, checkpointPages: pages, pageSize: 4096 });
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const chunk = new Uint8Array(3000).fill(9);
    // 400 commits of about a page each: 400 pages of WAL without checkpoints.
    for (let i = 0n; i < 400n; i++) {
      await store.acceptInput({ streamId: input.streamId, sequence: i, itemCount: 1n, data: chunk, mimeType: undefined }, []);
    }
    const wal = statSync(join(dataDir, "sessions.db-wal")).size;
    expect(wal).toBeLessThan(4 * pages * 4096);
    const read = await store.readInput(input.streamId, 0n, 400n);
    expect(read.reduce((sum, c) => sum + Number(c.itemCount), 0)).toBe(400);
    await store.close();
    const reopened = new SqliteSessionStore({ dataDir });
    const again = await reopened.readInput(input.streamId, 0n, 400n);
    expect(again.map((c) => c.sequence)).toEqual([...Array(400).keys()].map(BigInt));
    await reopened.close();
  });

  it("refuses a checkpointPages that is not a positive integer before opening anything", () => {
    for (const checkpointPages of [0, -1, 1.5, Number.NaN]) {
      expect(() => new SqliteSessionStore({ dataDir: sqliteDir(), checkpointPages })).toThrow(/checkpointPages must be a positive integer/);
    }
  });
});
