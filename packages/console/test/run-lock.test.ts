/** A tab's hold on the run it shows, through the Web Locks API (in memory here). */
import { afterEach, expect, it } from "vitest";
import { heldRuns, holdRun, releaseRun } from "../src/web/run-lock.js";
import { FakeLocks, installLocks } from "./support/fake-locks.js";

afterEach(() => void installLocks(undefined));

it("holds a run's lock until it is released, once however often it is held", async () => {
  const locks = installLocks(new FakeLocks());
  holdRun("a");
  holdRun("a");
  holdRun("b");
  expect(await heldRuns()).toEqual(new Set(["a", "b"]));
  releaseRun("a");
  await locks.released("golem-stream-console:run:a");
  expect(await heldRuns()).toEqual(new Set(["b"]));
  releaseRun("b");
  releaseRun("b"); // nothing held: nothing to do
  await locks.released("golem-stream-console:run:b");
  expect(await heldRuns()).toEqual(new Set());
});

it("counts a run whose lock another tab awaits, and no lock of another name", async () => {
  const locks = installLocks(new FakeLocks());
  let release: () => void = () => undefined;
  void locks.request("golem-stream-console:run:c", () => new Promise<void>((resolve) => (release = resolve)));
  void locks.request("golem-stream-console:run:c", () => Promise.resolve());
  void locks.request("something-else", () => new Promise(() => undefined));
  expect(await locks.query()).toMatchObject({ pending: [{ name: "golem-stream-console:run:c" }] });
  expect(await heldRuns()).toEqual(new Set(["c"]));
  release();
  await locks.released("golem-stream-console:run:c");
  expect(await heldRuns()).toEqual(new Set());
});

it("without Web Locks, holds nothing and cannot tell", async () => {
  installLocks(undefined);
  holdRun("a");
  releaseRun("a");
  expect(await heldRuns()).toBeUndefined();
});
