/**
 * The checkpoint store on an in-memory IndexedDB (fake-indexeddb): a run's record and its items
 * written together, read back up to the counts the record names, listed and removed per run.
 */
import "fake-indexeddb/auto";
import { afterEach, expect, it } from "vitest";
import { currentRunId, deleteRun, deleteRuns, listRuns, loadRun, saveRun, setCurrentRunId, type RunRecord } from "../src/web/run-store.js";

const record = (id: string, stored: number): RunRecord => ({
  id,
  title: `run ${id}`,
  state: undefined,
  cursors: {},
  streams: { s: { token: "s", label: "out", kind: "values", stored, storedBytes: 0 } },
});

const items = (count: number, from = 0) =>
  Array.from({ length: count }, (_, at) => ({ stream: "s", index: from + at, item: `item ${from + at}` }));

const ids = async (): Promise<string[]> => (await listRuns()).map((stored) => (stored as RunRecord).id).sort();

afterEach(async () => {
  await deleteRuns(await ids());
  setCurrentRunId(undefined);
});

it("a saved run reads back with its items, stamped with when it was written", async () => {
  const before = Date.now();
  await saveRun(record("a", 2), items(2));
  await saveRun(record("a", 3), items(1, 2));
  const loaded = await loadRun("a");
  expect(loaded?.record.title).toBe("run a");
  expect(loaded?.record.touchedAt).toBeGreaterThanOrEqual(before);
  expect(loaded?.items.get("s")).toEqual(["item 0", "item 1", "item 2"]);
});

it("reads only the items the record counts: items written past its count are not shown", async () => {
  await saveRun(record("a", 1), items(3));
  expect((await loadRun("a"))?.items.get("s")).toEqual(["item 0"]);
});

it("binary items and byte batches come back as written", async () => {
  const bytes = new Uint8Array([1, 2, 3]);
  await saveRun(record("b", 2), [
    { stream: "s", index: 0, item: bytes },
    { stream: "s", index: 1, item: { bytes, mimeType: "image/png" } },
  ]);
  expect((await loadRun("b"))?.items.get("s")).toEqual([bytes, { bytes, mimeType: "image/png" }]);
});

it("an unknown run reads as undefined", async () => {
  expect(await loadRun("nothing")).toBeUndefined();
});

it("removing a run removes its record and items and no other run's, even one whose id starts the same", async () => {
  await saveRun(record("a", 2), items(2));
  await saveRun(record("ab", 2), items(2));
  await deleteRun("a");
  expect(await loadRun("a")).toBeUndefined();
  expect(await ids()).toEqual(["ab"]);
  // Saved again with a count, "a" shows none of its old items: they went with it.
  await saveRun(record("a", 2));
  expect((await loadRun("a"))?.items.get("s")).toEqual([]);
  expect((await loadRun("ab"))?.items.get("s")).toEqual(["item 0", "item 1"]);
});

it("removes several runs in one call, and nothing for an empty list", async () => {
  await saveRun(record("a", 0));
  await saveRun(record("b", 0));
  await saveRun(record("c", 0));
  await deleteRuns([]);
  expect(await ids()).toEqual(["a", "b", "c"]);
  await deleteRuns(["a", "c"]);
  expect(await ids()).toEqual(["b"]);
});

it("the tab's current run is named in sessionStorage", () => {
  expect(currentRunId()).toBeUndefined();
  setCurrentRunId("a");
  expect(currentRunId()).toBe("a");
  expect(sessionStorage.getItem("golem-stream-console:run")).toBe("a");
  setCurrentRunId(undefined);
  expect(currentRunId()).toBeUndefined();
});
