/**
 * A store write that fails while the agent produces output: the invocation
 * fails (section 6.9: every open stream terminal first, then
 * `invocation-failed`), and that failure is recorded where the stored stream
 * ends. Before, the output's terminal was recorded at the count the producer
 * had reached, past the items the store never took; the store refused it
 * ("output terminal does not continue the stream"), the failure was never
 * recorded, and the session hung, for its client and for any resume, until
 * the server restarted.
 */
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspectToken } from "@golem-stream/tokens";
import { SqliteSessionStore, type Logger } from "../src/index.js";
import { type InputChunk, type InputCommitWatcher, type NewStream, type OutputEvent } from "../src/store/index.js";
import { RawClient, demoServerOn, demoStart, v, resumeAttach } from "./helpers.js";

/**
 * The embedded store, failing the output item at `failAt` once, as a disk
 * error would; with `breaks`, every output write and finish after it fails
 * too until `repair()` (a disk that stays full for a while).
 */
class FailingStore extends SqliteSessionStore {
  failAt: bigint | undefined;
  breaks = false;
  broken = false;
  refused = 0;
  override appendOutput(event: OutputEvent, introduced: readonly NewStream[]): Promise<void> {
    if (event.event === "item" && event.sequence === this.failAt) {
      this.failAt = undefined;
      this.broken = this.breaks;
      return Promise.reject(new Error("disk I/O error"));
    }
    if (this.broken) return this.#refuse();
    return super.appendOutput(event, introduced);
  }
  /** The input chunk at this sequence fails once. */
  failInputAt: bigint | undefined;
  override acceptInput(chunk: InputChunk, introduced: readonly NewStream[]): Promise<void> {
    if (chunk.sequence === this.failInputAt) {
      this.failInputAt = undefined;
      return Promise.reject(new Error("disk I/O error"));
    }
    return super.acceptInput(chunk, introduced);
  }
  /** The session's path for items that introduce no stream: the chunk at `failInputAt` fails in its place among the others. */
  override acceptInputWatched(chunk: InputChunk, epoch: bigint | undefined, watcher: InputCommitWatcher): void {
    if (chunk.sequence === this.failInputAt) {
      this.failInputAt = undefined;
      this.watchedFailures++;
      // A sequence the stream cannot take: the store refuses it, told in order with the chunks around it.
      super.acceptInputWatched({ ...chunk, sequence: chunk.sequence + 1_000_000n }, epoch, watcher);
      return;
    }
    super.acceptInputWatched(chunk, epoch, watcher);
  }
  /** The chunk at `failInputAt` joins no other write: it is handed over alone, above. */
  override joinInputWatched(chunk: InputChunk, epoch: bigint | undefined, watcher: InputCommitWatcher): boolean {
    return chunk.sequence !== this.failInputAt && super.joinInputWatched(chunk, epoch, watcher);
  }
  watchedFailures = 0;
  /** The next result fails once. */
  failResult = false;
  override setResult(sessionId: string, result: string, introduced: readonly NewStream[]): Promise<void> {
    if (this.failResult) {
      this.failResult = false;
      return Promise.reject(new Error("disk I/O error"));
    }
    return super.setResult(sessionId, result, introduced);
  }
  override finish(sessionId: string, outcome: string, at: number): Promise<void> {
    if (this.broken) return this.#refuse();
    return super.finish(sessionId, outcome, at);
  }
  resultsWithSuccess = 0;
  /** A result written with the success (nothing written after it) fails as `setResult` does: neither is recorded. */
  override finishWithResult(sessionId: string, result: string, outcome: string, at: number): Promise<void> {
    this.resultsWithSuccess++;
    if (this.failResult) {
      this.failResult = false;
      return Promise.reject(new Error("disk I/O error"));
    }
    return super.finishWithResult(sessionId, result, outcome, at);
  }
  repair(): void {
    this.broken = false;
    this.breaks = false;
  }
  #refuse(): Promise<never> {
    this.refused++;
    return Promise.reject(new Error("disk I/O error"));
  }
}

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-write-failure-"));
const store = new FailingStore({ dataDir, synchronous: "normal" });
/** Every error the server logs, by event. */
const errors: string[] = [];
const logger: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: (_message, fields) => void errors.push(String(fields?.["event"])),
  debug: () => undefined,
};
const server = demoServerOn(store, dataDir, logger);

describe("an output write the store fails", () => {
  it("fails the invocation with its output ended where the store's stream ends; a takeover sees the same", async () => {
    store.failAt = 40n;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("count", v.record(v.u32(2000), v.u32(0))));
    const accepted = await client.nextOf("invocationAccepted");
    const { messages } = await client.all();
    const items = messages.filter((m) => m.type === "outputStreamItem");
    expect(items.map((m) => m.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => BigInt(i)));
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      sequence: 40n,
      outcome: { kind: "cancelled", reason: "invocation-failed" },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });

    const next = await RawClient.connect(server.url());
    next.send(resumeAttach("takeover", accepted.sessionToken));
    const replay = await next.all();
    expect(replay.messages.filter((m) => m.type === "outputStreamItem")).toHaveLength(40);
    expect(replay.messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
  });

  it("a store that keeps failing for a while: recording the failure is tried again until it takes", async () => {
    store.failAt = 10n;
    store.breaks = true;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("count", v.record(v.u32(2000), v.u32(0))));
    await client.nextOf("invocationAccepted");
    // The failure's own records are refused (at least the terminal, twice: the first try and a retry).
    while (store.refused < 2) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(client.received.some((m) => m.type === "invocationFinished")).toBe(false);
    store.repair();
    const { messages } = await client.all();
    expect(messages.filter((m) => m.type === "outputStreamItem")).toHaveLength(10);
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      sequence: 10n,
      outcome: { kind: "cancelled", reason: "invocation-failed" },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
  });

  it("an input write the store fails: the invocation fails, and the chunks refused behind it are not logged as errors one by one", async () => {
    errors.length = 0;
    store.failInputAt = 10n;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    for (let i = 0; i < 200; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
    const { messages, closed } = await client.all();
    const acks = messages.filter((m) => m.type === "inputStreamAck");
    expect(acks.every((m) => m.highestContiguousSequence <= 10n)).toBe(true);
    // A fatal failure, told on the connection it happened on (protocol section 11): the input
    // cancelled at the items the store holds, the invocation finished, a normal close; no rejection.
    expect(messages.filter((m) => m.type === "invocationRejected")).toEqual([]);
    expect(messages).toContainEqual({ type: "streamCancel", channel, reason: "invocation-failed" });
    expect(acks.at(-1)?.highestContiguousSequence).toBe(10n);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
    expect(closed.code).toBe(1000);
    const next = await RawClient.connect(server.url());
    next.send(resumeAttach("takeover", accepted.sessionToken));
    const replay = await next.all();
    expect(replay.messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
    expect(errors.filter((event) => event === "attach.fault").length).toBeLessThanOrEqual(1);
    expect(store.watchedFailures).toBe(1); // the failure went the way the session hands such items over
  });

  it("an input write the store fails with the client's end right behind it: the end is not recorded short of its items; the input is cancelled as without it, and a takeover sees the cancel", async () => {
    store.failInputAt = 3n;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    for (let i = 0; i < 6; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
    client.send({ type: "inputStreamEnd", channel, sequence: 6n });
    const { messages, closed } = await client.all();
    expect(messages.filter((m) => m.type === "invocationRejected")).toEqual([]);
    expect(messages).toContainEqual({ type: "streamCancel", channel, reason: "invocation-failed" });
    expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({ highestContiguousSequence: 3n, terminal: true });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
    expect(closed.code).toBe(1000);
    // The log holds the server's cancel at 3, not an end the client never sent there.
    const sessionId = (inspectToken(accepted.sessionToken).fields as { sessionId: string }).sessionId;
    expect(await store.listStreams(sessionId)).toMatchObject([
      { count: 3n, inputTerminal: { kind: "cancelled", reason: "invocation-failed", by: "server" } },
    ]);
    const next = await RawClient.connect(server.url());
    next.send(resumeAttach("takeover", accepted.sessionToken));
    expect((await next.nextOf("invocationAccepted")).mappings[0]!.inputHighWater).toEqual({ sequence: 3n, terminal: true });
    next.terminate();
  });

  it("a result the store fails to record: the invocation fails (its result's streams were never stored, so nothing ends them)", async () => {
    store.failResult = true;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("count", v.record(v.u32(100), v.u32(0))));
    const { messages } = await client.all();
    expect(messages.some((m) => m.type === "invocationResult")).toBe(false);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
  });

  it("a result the store fails to record with the success: the invocation fails, and the store holds neither", async () => {
    store.failResult = true;
    const before = store.resultsWithSuccess;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("one") });
    client.send({ type: "inputStreamEnd", channel, sequence: 1n });
    const { messages } = await client.all();
    expect(store.resultsWithSuccess - before).toBe(1); // the result went with the success, and that write failed
    expect(store.failResult).toBe(false);
    expect(messages.some((m) => m.type === "invocationResult")).toBe(false);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
    const sessionId = (inspectToken(accepted.sessionToken).fields as { sessionId: string }).sessionId;
    const stored = await store.getSession(sessionId);
    expect(stored?.result).toBeUndefined();
    expect(JSON.parse(stored?.outcome ?? "{}")).toMatchObject({ kind: "failure", code: "invocation-failed" });
  });
});
