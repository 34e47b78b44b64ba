/**
 * `maxStoredBytesPerPrincipal`: the payload bytes one principal keeps in the
 * store. An input or output item that would go past it is never stored and
 * its invocation fails with `limit-exceeded`; a start while the principal is
 * at the bound is refused with `limit-exceeded` (not retryable). Another
 * principal works normally throughout, the count survives a restart (it is
 * read back from the store), and the retention sweep gives a purged
 * session's bytes back.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { ServerMessage } from "@golem-stream/wire";
import { demoStart, RawClient, startTestServer, TOKEN, v, type TestServer } from "./helpers.js";
import { MemorySessionStore } from "../src/index.js";
import { ALICE, BOB, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { sample } from "./support/operations.js";

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const refusals = async () =>
  sample(await running!.server.metrics!.metrics(), "golem_stream_principal_limit_refusals_total", { limit: "stored-bytes" });

const LIMIT_FAILURE = {
  type: "invocationFinished",
  outcome: { kind: "failure", code: "limit-exceeded", message: expect.stringMatching(/at most 6 bytes in the store/) },
};

/** Starts `digest` (a u8 input) for `token` and returns the client and the input's channel. */
async function startDigest(url: string, token: string): Promise<{ client: RawClient; channel: number }> {
  const client = await RawClient.connect(url, token);
  client.send(demoStart("digest", v.record(v.stream(randomUUID()))));
  const accepted = await client.nextOf("invocationAccepted");
  return { client, channel: accepted.mappings[0]!.channel };
}

/** Sends `bytes` as the next u8 chunk at `sequence` and waits for its acknowledgement. */
async function sendAcked(client: RawClient, channel: number, sequence: bigint, bytes: number): Promise<void> {
  client.send({ type: "input-u8", channel, sequence, payload: new Uint8Array(bytes).fill(1) });
  expect(await client.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: sequence + BigInt(bytes) });
}

/** Runs `digest` over `bytes` input bytes to its end; returns its last message. */
async function digestToEnd(url: string, token: string, bytes: number): Promise<ServerMessage | undefined> {
  const { client, channel } = await startDigest(url, token);
  await sendAcked(client, channel, 0n, bytes);
  client.send({ type: "inputStreamEnd", channel, sequence: BigInt(bytes) });
  return (await client.all()).messages.at(-1);
}

describe("maxStoredBytesPerPrincipal", () => {
  it("an input item past the bound is never acknowledged and fails its invocation with limit-exceeded; the principal's next start is refused; another principal works", async () => {
    running = await startMemoryServer({ metrics: true, limits: { maxStoredBytesPerPrincipal: 6 } });
    const { client, channel } = await startDigest(running.url, ALICE);
    await sendAcked(client, channel, 0n, 6);
    client.send({ type: "input-u8", channel, sequence: 6n, payload: new Uint8Array([2]) });
    const { messages } = await client.all();
    // Only the first chunk was acknowledged; the input ended for the failure.
    expect(messages.filter((m) => m.type === "inputStreamAck").map((m) => m.highestContiguousSequence)).toEqual([6n, 6n]);
    expect(messages).toContainEqual({ type: "streamCancel", channel, reason: "invocation-failed" });
    expect(messages.at(-1)).toEqual(LIMIT_FAILURE);
    expect(await refusals()).toBe(1);

    // Bob's bytes are his own: he stores as much as Alice did, and finishes.
    expect(await digestToEnd(running.url, BOB, 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });

    // Alice keeps 6 bytes, as many as she may: a new start is refused, definitively.
    const again = await RawClient.connect(running.url, ALICE);
    again.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await again.next()).toMatchObject({
      type: "invocationRejected",
      code: "limit-exceeded",
      retryable: false,
      message: expect.stringMatching(/at most 6 bytes in the store/),
    });
    expect((await again.all()).closed.code).toBe(1002);
    expect(await refusals()).toBe(2);
  });

  it("an output item past the bound is never stored or sent, and fails its invocation with limit-exceeded", async () => {
    running = await startMemoryServer({ metrics: true, limits: { maxStoredBytesPerPrincipal: 6 } });
    const alice = await RawClient.connect(running.url, ALICE);
    alice.send(demoStart("blobs", v.record(v.u32(3), v.u32(4))));
    const { messages } = await alice.all();
    const items = messages.filter((m) => m.type === "output-binary");
    expect(items).toHaveLength(1);
    expect(messages).toContainEqual(
      expect.objectContaining({ type: "outputStreamEnd", outcome: { kind: "cancelled", reason: "invocation-failed" }, sequence: 1n }),
    );
    expect(messages.at(-1)).toEqual(LIMIT_FAILURE);
    expect(await refusals()).toBe(1);

    // The same method within the bound for Bob: every blob.
    const bob = await RawClient.connect(running.url, BOB);
    bob.send(demoStart("blobs", v.record(v.u32(1), v.u32(6))));
    const bobs = (await bob.all()).messages;
    expect(bobs.filter((m) => m.type === "output-binary")).toHaveLength(1);
    expect(bobs.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});

/** A memory store that tells when a purge deleted something. */
class ObservedPurges extends MemorySessionStore {
  #purged: () => void = () => undefined;
  readonly purged = new Promise<void>((resolve) => (this.#purged = resolve));

  override async purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    const count = await super.purgeFinished(finishedBefore, now, tombstonesBefore);
    if (count > 0) this.#purged();
    return count;
  }
}

describe("maxStoredBytesPerPrincipal and the retention sweep", () => {
  it("a purged session gives its bytes back: the principal at its bound may start again", async () => {
    let clock = 1_000_000;
    const store = new ObservedPurges();
    // The sweep runs every sessionRetentionMs (real time) and purges by the injected clock.
    running = await startMemoryServer({ store, now: () => clock, limits: { maxStoredBytesPerPrincipal: 6, sessionRetentionMs: 200 } });
    expect(await digestToEnd(running.url, ALICE, 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const refused = await RawClient.connect(running.url, ALICE);
    refused.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await refused.next()).toMatchObject({ type: "invocationRejected", code: "limit-exceeded" });

    clock += 1000;
    await store.purged;
    expect(await digestToEnd(running.url, ALICE, 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});

describe("maxStoredBytesPerPrincipal when the store cannot sum", () => {
  it("the server starts and serves all the same, counting from zero, and logs why", async () => {
    const store = new (class extends MemorySessionStore {
      override async storedBytesByPrincipal(): Promise<never> {
        throw new Error("the sum failed");
      }
    })();
    const events: unknown[] = [];
    const logger = {
      info() {},
      warn() {},
      error: (_: string, fields?: Readonly<Record<string, unknown>>) => events.push(fields?.["event"]),
    };
    running = await startMemoryServer({ store, logger, limits: { maxStoredBytesPerPrincipal: 6 } });
    expect(await digestToEnd(running.url, ALICE, 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(events).toContain("stored-bytes.count-failed");
  });
});

describe("maxStoredBytesPerPrincipal over a restart (SQLite)", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.dispose();
    server = undefined;
  });

  it("counts what the store kept before the restart: the principal at its bound is refused, the other is not", async () => {
    const limits = { maxStoredBytesPerPrincipal: 6 };
    const first = await startTestServer({ limits });
    expect(await digestToEnd(first.url, TOKEN, 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    await first.close();

    server = await startTestServer({ limits, dataDir: first.dataDir });
    const refused = await RawClient.connect(server.url, TOKEN);
    refused.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await refused.next()).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
    expect(await digestToEnd(server.url, "other-token", 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});
