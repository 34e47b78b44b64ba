/**
 * One run on the page, against a client in memory (test/support/fake-client.ts) and an in-memory
 * IndexedDB: what it stores at a checkpoint, what it removes when it ends, fails, is discarded or
 * is restored over, and how a restored run continues.
 */
import "fake-indexeddb/auto";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { ClientError, type ResumeState } from "@golem-stream/client";
import { heldRuns } from "../src/web/run-lock.js";
import { currentRunId, loadRun, saveRun, setCurrentRunId, type RunRecord } from "../src/web/run-store.js";
import { Run, type RunElements } from "../src/web/run.js";
import { until } from "./support/dom.js";
import { fakeClient, type FakeInvocation } from "./support/fake-client.js";
import { FakeLocks, installLocks } from "./support/fake-locks.js";

const OPTIONS = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  method: "count",
  constructorParameters: { kind: "record", value: [] },
  methodParameters: { kind: "record", value: [] },
} as never;
const text = (value: string) => ({ kind: "string", value }) as never;
const accepted = (cursors: string[]): ResumeState => ({
  sessionToken: "gai1_session",
  outputCursors: cursors,
  selector: {} as never,
  idempotencyKey: "key",
});

let ui: RunElements;
let locks: FakeLocks;
const runs: Run[] = [];

function elements(): RunElements {
  const make = <T extends HTMLElement>(tag: string): T => document.body.appendChild(document.createElement(tag)) as T;
  return {
    title: make("h2"),
    status: make("p"),
    streams: make("div"),
    result: make("pre"),
    outcome: make("p"),
    cancel: make("button"),
    resume: make("button"),
  };
}

const shown = (elements: RunElements = ui): string[] => Array.from(elements.streams.querySelectorAll("li"), (li) => li.textContent ?? "");
const outcome = (text: string, elements: RunElements = ui): Promise<void> =>
  until(elements.outcome, () => elements.outcome.textContent === text);

beforeEach(() => {
  document.body.replaceChildren();
  ui = elements();
  locks = installLocks(new FakeLocks());
});

afterEach(async () => {
  for (const run of runs.splice(0)) await run.discard();
  setCurrentRunId(undefined);
  installLocks(undefined);
});

async function started(): Promise<{ run: Run; invocation: FakeInvocation; id: string }> {
  const { client, calls } = fakeClient();
  const run = await Run.start(client, OPTIONS, "echo.count", ui);
  runs.push(run);
  return { run, invocation: calls[0]!.invocation, id: currentRunId()! };
}

it("a started run is stored at once, becomes the tab's current run and holds its lock", async () => {
  const { id } = await started();
  expect(ui.title.textContent).toBe("echo.count");
  expect(ui.status.textContent).toBe("starting");
  expect((await loadRun(id))?.record).toMatchObject({ id, title: "echo.count", state: undefined });
  expect(await heldRuns()).toEqual(new Set([id]));
});

it("a checkpoint stores the state with exactly the items its cursors cover", async () => {
  const { run, invocation, id } = await started();
  const stream = invocation.stream("s");
  for (const value of ["a", "b", "c"]) stream.push(text(value));
  await until(ui.streams, () => shown().length === 3);
  await invocation.onCheckpoint(accepted([stream.cursor(1)]));
  await run.written();
  const stored = await loadRun(id);
  expect(stored?.record.state).toEqual(accepted([stream.cursor(1)]));
  expect(stored?.record.cursors).toEqual({ [stream.cursor(1)]: { stream: "s", count: 2 } });
  expect(stored?.items.get("s")).toEqual(["a", "b"]);
  // The next checkpoint adds only what is new.
  await invocation.onCheckpoint(accepted([stream.cursor(2)]));
  await run.written();
  expect((await loadRun(id))?.items.get("s")).toEqual(["a", "b", "c"]);
});

it("binary items are stored with their bytes and type, and shown with a download link", async () => {
  const { run, invocation, id } = await started();
  const stream = invocation.stream("s");
  stream.push({ bytes: new Uint8Array([1, 2]), mimeType: "text/html" } as never);
  stream.push(text("next"));
  await until(ui.streams, () => shown().length === 2);
  await invocation.onCheckpoint(accepted([stream.cursor(0)]));
  await run.written();
  expect((await loadRun(id))?.items.get("s")).toEqual([{ bytes: new Uint8Array([1, 2]), mimeType: "text/html" }]);
  expect(ui.streams.querySelector("li a")?.getAttribute("type")).toBe("application/octet-stream");
});

it("a checkpoint naming a cursor the page cannot place is refused, so no cursor is stored without its items", async () => {
  const { invocation } = await started();
  await expect(invocation.onCheckpoint(accepted(["somewhere-else"]))).rejects.toThrow(
    "the console cannot tell which items a cursor covers",
  );
});

it("a run that has ended removes its records, clears the tab's run and lets go of its lock before it shows the outcome", async () => {
  const { run, invocation, id } = await started();
  const stream = invocation.stream("s");
  stream.push(text("a"));
  await until(ui.streams, () => shown().length === 1);
  await invocation.onCheckpoint(accepted([stream.cursor(0)]));
  stream.end();
  invocation.succeed();
  await outcome("success");
  expect(ui.status.textContent).toBe("finished");
  expect(await loadRun(id)).toBeUndefined();
  expect(currentRunId()).toBeUndefined();
  await locks.released(`golem-stream-console:run:${id}`);
  expect(await heldRuns()).toEqual(new Set());
  // A late checkpoint writes nothing back.
  await invocation.onCheckpoint(accepted([stream.cursor(0)]));
  await run.written();
  expect(await loadRun(id)).toBeUndefined();
});

it("the outcome waits for every stream to be read to its end", async () => {
  const { invocation, id } = await started();
  const stream = invocation.stream("s");
  invocation.succeed();
  stream.push(text("late"));
  stream.end();
  await outcome("success");
  expect(shown()).toEqual(["late"]);
  expect(await loadRun(id)).toBeUndefined();
});

it("a failed invocation is an outcome too: shown with its kind and code, and the records removed", async () => {
  const { invocation, id } = await started();
  invocation.fail(new ClientError("invocation-failed", "the agent failed", { code: "invocation-failed" }));
  await outcome("failed: invocation-failed (invocation-failed): the agent failed");
  expect(ui.outcome.className).toBe("error");
  expect(await loadRun(id)).toBeUndefined();
});

it("a lost connection is no outcome: the run is kept for Resume", async () => {
  const { invocation, id } = await started();
  invocation.fail(new ClientError("connection-lost", "the network went away"));
  await outcome("unknown: the checkpoint can continue it (Resume)");
  expect(ui.status.textContent).toBe("stopped: connection-lost: the network went away");
  expect(ui.resume.hidden).toBe(false);
  expect(await loadRun(id)).toBeDefined();
  expect(currentRunId()).toBe(id);
});

it("a discarded run is cancelled, its records removed and its Blob URLs revoked", async () => {
  const revoke = vi.spyOn(URL, "revokeObjectURL");
  const { run, invocation, id } = await started();
  const stream = invocation.stream("s");
  stream.push({ bytes: new Uint8Array([1]) } as never);
  await until(ui.streams, () => shown().length === 1);
  const link = ui.streams.querySelector("li a")!.getAttribute("href");
  await run.discard();
  runs.length = 0;
  expect(invocation.cancelled).toEqual(["replaced in the console"]);
  expect(await loadRun(id)).toBeUndefined();
  expect(currentRunId()).toBeUndefined();
  expect(revoke).toHaveBeenCalledWith(link);
  revoke.mockRestore();
});

it("a restored run shows its stored items and takes over from the stored state; the server's next item follows", async () => {
  const first = await started();
  const stream = first.invocation.stream("s");
  stream.push(text("a"));
  stream.push(text("b"));
  await until(ui.streams, () => shown().length === 2);
  await first.invocation.onCheckpoint(accepted([stream.cursor(1)]));
  await first.run.written();
  runs.length = 0; // the page went away: nothing discards it

  const again = elements();
  const { client, calls } = fakeClient();
  const run = await Run.restore(client, first.id, again);
  runs.push(run!);
  expect(shown(again)).toEqual(["a", "b"]);
  expect(calls.map((call) => [call.kind, call.state])).toEqual([["takeover", accepted([stream.cursor(1)])]]);
  expect(again.status.textContent).toBe("resuming from the checkpoint");
  const resumed = calls[0]!.invocation.stream("s");
  resumed.push(text("c"));
  resumed.end();
  calls[0]!.invocation.succeed();
  await outcome("success", again);
  expect(shown(again)).toEqual(["a", "b", "c"]);
  expect(await loadRun(first.id)).toBeUndefined();
});

it("a stored run that had ended is shown once more, then removed", async () => {
  const record: RunRecord = { id: "ended", title: "t", state: undefined, cursors: {}, streams: {}, outcome: { ok: false, text: "boom" } };
  await saveRun(record);
  const { client, calls } = fakeClient();
  const run = await Run.restore(client, "ended", ui);
  expect(ui.outcome.textContent).toBe("failed: boom");
  expect(calls).toEqual([]);
  expect(await loadRun("ended")).toBeUndefined();
  expect(run).toBeDefined();
});

it("a stored run that was never started says nothing ran, and is removed", async () => {
  await saveRun({ id: "unstarted", title: "t", state: undefined, cursors: {}, streams: {} });
  const { client, calls } = fakeClient();
  await Run.restore(client, "unstarted", ui);
  expect(ui.outcome.textContent).toBe("failed: the page was closed before the invocation was started; nothing ran");
  expect(calls).toEqual([]);
  expect(await loadRun("unstarted")).toBeUndefined();
});

it("restoring a run that is not stored gives nothing", async () => {
  const { client } = fakeClient();
  expect(await Run.restore(client, "nowhere", ui)).toBeUndefined();
});
