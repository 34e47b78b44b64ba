/**
 * The group commit at `synchronous: "full"` (group-commit.ts): commits do not
 * sync on the event loop; a write resolves only after a journal sync that
 * began after its commit (at most two syncs run at once), reads
 * (`durable()`) wait the same way, and a failed sync fails every write it
 * covered. The sync is a controlled promise here, so nothing
 * depends on timing.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteSessionStore } from "../src/index.js";
import { bytes, removeStoreDirs, session, sqliteDir, startAttempt, stream } from "./support/store-records.js";
import { GroupCommit, runWrite, type CommitGroup, type LogAppend } from "../src/store/group-commit.js";
import { datasyncsDuring } from "./support/datasync-spy.js";
import type { PayloadFiles } from "../src/store/payload-files.js";

const commitGroup: CommitGroup = (batch, outcomes) => batch.forEach((item, i) => (outcomes[i] = runWrite(item)));
const noPayloads = {} as PayloadFiles; // no write here has a payload

function controlledSyncs() {
  const pending: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const sync = (): Promise<void> => new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
  return { sync, pending };
}

/** Lets the group commit's setImmediate and the promise reactions run. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function track<T>(promise: Promise<T>): { state: () => string } {
  let state = "pending";
  promise.then(
    () => (state = "resolved"),
    () => (state = "rejected"),
  );
  return { state: () => state };
}

it("a write resolves only after a sync that began after its commit; at most two syncs run, a third commit waits for one", async () => {
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  let committed = 0;
  const first = track(group.write(() => ++committed));
  await turn();
  expect(committed).toBe(1); // committed at once...
  expect(pending).toHaveLength(1); // ...and its sync started
  await turn();
  expect(first.state()).toBe("pending"); // not acknowledged before the sync

  const second = track(group.write(() => ++committed));
  await turn();
  expect(committed).toBe(2);
  expect(pending).toHaveLength(2); // its own sync: the first began before its commit
  const third = track(group.write(() => ++committed));
  await turn();
  expect(committed).toBe(3);
  expect(pending).toHaveLength(2); // two in flight: the third commit waits for a free slot
  const read = track(group.durable());

  pending[0]!.resolve();
  await turn();
  expect(first.state()).toBe("resolved");
  expect(second.state()).toBe("pending"); // its commit came after the first sync began
  expect(third.state()).toBe("pending");
  expect(read.state()).toBe("pending");
  expect(pending).toHaveLength(3); // the freed slot syncs the third commit

  pending[2]!.resolve(); // the later sync finishes first: it covers the second commit too
  await turn();
  expect(second.state()).toBe("resolved");
  expect(third.state()).toBe("resolved");
  expect(read.state()).toBe("resolved");
  pending[1]!.resolve(); // the slower one settles nothing more
  await turn();
  await expect(group.durable()).resolves.toBeUndefined(); // nothing unsynced
});

it("a committed write waiting for its sync holds nothing of its work, row or bytes (only what settles it)", async () => {
  // A full collection on demand: what a committed write still holds is exactly what survives it.
  setFlagsFromString("--expose-gc");
  const collectGarbage = runInNewContext("gc") as () => void;
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  // The item's bytes, reachable only through the write: its closure and its row both hold them.
  const write = (() => {
    const bytes = new Uint8Array(4096).fill(7);
    const append: LogAppend = { log: "input", streamId: "s", sequence: 0n, itemCount: 1n, rows: () => [[bytes]], packable: bytes };
    return { bytes: new WeakRef(bytes), settled: track(group.write(() => bytes.length, append)) };
  })();
  await turn();
  expect(pending).toHaveLength(1); // committed; its sync has not completed
  collectGarbage();
  await turn(); // a WeakRef keeps its target until the job that made or read it has ended
  collectGarbage();
  expect(write.bytes.deref()).toBeUndefined();
  expect(write.settled.state()).toBe("pending"); // still not acknowledged before the sync
  pending[0]!.resolve();
  await turn();
  expect(write.settled.state()).toBe("resolved");
});

it("a committed watched write whose task is also its append holds neither while it waits for its sync (only its watcher)", async () => {
  setFlagsFromString("--expose-gc");
  const collectGarbage = runInNewContext("gc") as () => void;
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  const told: string[] = [];
  // One object that is the write's task and its append (as the SQLite store's InputAppendTask), holding the bytes.
  const task = (() => {
    const bytes = new Uint8Array(4096).fill(7);
    const both = {
      log: "input" as const,
      streamId: "s",
      sequence: 0n,
      itemCount: 1n,
      rows: () => [[bytes]],
      packable: bytes,
      run: () => bytes.length,
    };
    group.writeWatched(both, watcher(told, "task"), both);
    return new WeakRef(both);
  })();
  await turn();
  expect(pending).toHaveLength(1); // committed; its sync has not completed
  collectGarbage();
  await turn();
  collectGarbage();
  expect(task.deref()).toBeUndefined();
  expect(told).toEqual([]); // not told before the sync
  pending[0]!.resolve();
  await turn();
  expect(told).toEqual(["task ok"]);
});

it("a failed sync fails every write it covered, and durable() with them", async () => {
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  const write = group.write(() => 1);
  await turn();
  const read = group.durable();
  pending[0]!.reject(new Error("EIO"));
  await expect(write).rejects.toThrow("EIO");
  await expect(read).rejects.toThrow("EIO");
});

it("after a failed sync the store takes no more writes: a later sync's success settles nothing, and writes and reads fail", async () => {
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  let committed = 0;
  const first = group.write(() => ++committed);
  await turn();
  const second = group.write(() => ++committed);
  await turn();
  expect(pending).toHaveLength(2); // two syncs in flight, the second covering both groups
  pending[0]!.reject(new Error("EIO"));
  await expect(first).rejects.toThrow("EIO");
  // The journal may miss pages of the first group: the second group's frames come after them.
  await expect(second).rejects.toThrow("EIO");
  pending[1]!.resolve();
  await turn();
  expect(group.failure).toMatchObject({ name: "JournalSyncError", cause: new Error("EIO") });
  await expect(group.write(() => ++committed)).rejects.toThrow(/could not be synced/);
  expect(committed).toBe(2); // nothing committed after the failure
  await expect(group.durable()).rejects.toThrow(/could not be synced/);
});

it("a sync that fails while a later group's payloads are written keeps that group from committing", async () => {
  const { sync, pending } = controlledSyncs();
  let release: () => void = () => {};
  const payloads = { writeDurably: () => new Promise<void>((resolve) => (release = resolve)) } as unknown as PayloadFiles;
  const group = new GroupCommit(commitGroup, payloads, sync);
  let committed = 0;
  const first = group.write(() => ++committed);
  await turn();
  const withPayload = group.write(() => ++committed, undefined, { bytes: new Uint8Array(1) } as never);
  await turn();
  pending[0]!.reject(new Error("EIO"));
  await expect(first).rejects.toThrow("EIO");
  release();
  await expect(withPayload).rejects.toThrow(/could not be synced/);
  expect(committed).toBe(1);
});

it("drain() waits for the sync in flight", async () => {
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  const write = track(group.write(() => 1));
  const drained = track(group.drain());
  await turn();
  await turn();
  expect(drained.state()).toBe("pending");
  pending[0]!.resolve();
  await turn();
  expect(write.state()).toBe("resolved");
  expect(drained.state()).toBe("resolved");
});

it("without a sync function a write resolves at its commit (synchronous: normal)", async () => {
  const group = new GroupCommit(commitGroup, noPayloads);
  await expect(group.write(() => 7)).resolves.toBe(7);
  await expect(group.durable()).resolves.toBeUndefined();
});

/** A watcher of one write (`GroupCommit.writeWatched`), recording when and how it was told. */
function watcher(log: string[], name: string) {
  return { inputSettled: (error: Error | undefined) => log.push(error === undefined ? `${name} ok` : `${name} ${error.message}`) };
}

it("a watched write is told only after a sync that began after its commit, in order with the promised writes around it", async () => {
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  const told: string[] = [];
  let committed = 0;
  group.writeWatched(() => ++committed, watcher(told, "first"));
  void group.write(() => ++committed).then(() => told.push("promised ok"));
  group.writeWatched(
    () => {
      throw new Error("stale sequence");
    },
    watcher(told, "third"),
  );
  expect(told).toEqual([]); // never told before `writeWatched` returns
  await turn();
  expect(committed).toBe(2); // committed at once (the third rolled back alone)...
  expect(told).toEqual([]); // ...told nothing before the sync
  pending[0]!.resolve();
  await turn();
  expect(told).toEqual(["first ok", "third stale sequence", "promised ok"]); // watchers at the settle, the promise's reaction after it
});

it("a failed sync or commit tells each watched write it covered the error", async () => {
  const { sync, pending } = controlledSyncs();
  const group = new GroupCommit(commitGroup, noPayloads, sync);
  const told: string[] = [];
  group.writeWatched(() => 1, watcher(told, "synced"));
  await turn();
  pending[0]!.reject(new Error("EIO"));
  await turn();
  expect(told).toEqual(["synced EIO"]);
  const failing = new GroupCommit(() => {
    throw new Error("disk full");
  }, noPayloads);
  failing.writeWatched(() => 1, watcher(told, "committed"));
  await turn();
  expect(told).toEqual(["synced EIO", "committed disk full"]);
});

it("a watcher that throws does not keep the writes after it from being told", async () => {
  const group = new GroupCommit(commitGroup, noPayloads);
  const told: string[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    group.writeWatched(() => 1, {
      inputSettled: () => {
        throw new Error("a broken watcher");
      },
    });
    group.writeWatched(() => 2, watcher(told, "next"));
    await turn();
    await turn();
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  expect(told).toEqual(["next ok"]);
  expect(unhandled).toEqual([new Error("a broken watcher")]);
});

describe("SqliteSessionStore", () => {
  afterEach(removeStoreDirs);

  it("acceptInputWatched commits like acceptInput and tells each chunk's outcome once, after returning: in order; a stale sequence and a stale epoch fail alone", async () => {
    const store = new SqliteSessionStore({ dataDir: sqliteDir() });
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const told: string[] = [];
    const chunk = (sequence: bigint, text: string) => ({
      streamId: input.streamId,
      sequence,
      itemCount: 1n,
      data: bytes(text),
      mimeType: undefined,
    });
    const all = new Promise<void>((resolve) => {
      const tell = (name: string) => ({
        inputSettled: (error: Error | undefined) => {
          told.push(error === undefined ? `${name} ok` : `${name} failed`);
          if (told.length === 5) resolve();
        },
      });
      store.acceptInputWatched(chunk(0n, "a"), undefined, tell("0"));
      store.acceptInputWatched(chunk(1n, "b"), 1n, tell("1"));
      store.acceptInputWatched(chunk(5n, "x"), undefined, tell("gap"));
      store.acceptInputWatched(chunk(2n, "y"), 7n, tell("stale epoch"));
      store.acceptInputWatched(chunk(2n, "c"), undefined, tell("2"));
      expect(told).toEqual([]);
    });
    await all;
    expect(told).toEqual(["0 ok", "1 ok", "gap failed", "stale epoch failed", "2 ok"]); // in the order handed over
    const stored = await store.readInput(input.streamId, 0n, 3n);
    expect(stored.map((c) => new TextDecoder().decode(c.data))).toEqual(["a", "b", "c"]);
    await store.close();
  });

  it("at synchronous: full (the default) a commit resolves after a sync of the WAL from the thread pool; at normal without", async () => {
    for (const synchronous of ["full", "normal"] as const) {
      const dataDir = sqliteDir();
      const { synced } = await datasyncsDuring(async () => {
        const store = new SqliteSessionStore({ dataDir, synchronous });
        const s = session();
        await store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
        await store.close();
      });
      if (synchronous === "full") expect(synced.length).toBeGreaterThan(0);
      else expect(synced).toEqual([]);
    }
  });
});
