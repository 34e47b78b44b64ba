/**
 * `maxStoredBytesPerPrincipal`: the bytes one principal keeps in the store,
 * its payloads and its sessions' own records (store/record-bytes.ts). An
 * input or output item that would go past it is never stored and its
 * invocation fails with `limit-exceeded`; a start whose record would go past
 * it, or a resume or takeover whose attempt record would, is refused with
 * `limit-exceeded` (not retryable), an exact replay never. Another principal
 * works normally throughout, the count survives a restart (it is read back
 * from the store), and the retention sweep gives a purged session's bytes
 * back. The bounds here are set from what the store says a principal keeps,
 * so that an item lands exactly at the bound or one byte past it.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { ServerMessage } from "@golem-stream/wire";
import { demoStart, RawClient, resumeAttach, startTestServer, TOKEN, v, type TestServer } from "./helpers.js";
import { MemorySessionStore, SqliteSessionStore, type SessionStore } from "../src/index.js";
import { ALICE, BOB, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { sample } from "./support/operations.js";
import { attemptHeadroom } from "../src/admission/stored-bytes.js";

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const refusals = async () =>
  sample(await running!.server.metrics!.metrics(), "golem_stream_principal_limit_refusals_total", { limit: "stored-bytes" });

/** The bound of most tests here: room for a few sessions' records and tens of KiB of payload. */
const LIMIT = 100_000;

const LIMIT_FAILURE = {
  type: "invocationFinished",
  outcome: { kind: "failure", code: "limit-exceeded", message: expect.stringMatching(/at most 100000 bytes in the store/) },
};

/** What `principal` keeps in `store`, by the store's own sum (the count the server starts from). */
async function keptBy(store: SessionStore, principal: string): Promise<number> {
  return (await store.storedBytesByPrincipal!()).find((total) => total.principal === principal)?.bytes ?? 0;
}

/** Starts `digest` (a u8 input) for `token` and returns the client, the input's channel and the acceptance. */
async function startDigest(
  url: string,
  token: string,
): Promise<{ client: RawClient; channel: number; accepted: { readonly sessionToken: string } }> {
  const client = await RawClient.connect(url, token);
  client.send(demoStart("digest", v.record(v.stream(randomUUID()))));
  const accepted = await client.nextOf("invocationAccepted");
  return { client, channel: accepted.mappings[0]!.channel, accepted };
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
    const store = new MemorySessionStore();
    running = await startMemoryServer({ store, metrics: true, limits: { maxStoredBytesPerPrincipal: LIMIT } });
    const { client, channel, accepted } = await startDigest(running.url, ALICE);
    // Alice's session's record is counted already; her input fills the rest of the bound exactly.
    const room = LIMIT - (await keptBy(store, "alice"));
    expect(room).toBeGreaterThan(90_000);
    await sendAcked(client, channel, 0n, room);
    client.send({ type: "input-u8", channel, sequence: BigInt(room), payload: new Uint8Array([2]) });
    const { messages } = await client.all();
    // Only the first chunk was acknowledged; the input ended for the failure.
    expect(messages.filter((m) => m.type === "inputStreamAck").map((m) => m.highestContiguousSequence)).toEqual([
      BigInt(room),
      BigInt(room),
    ]);
    expect(messages).toContainEqual({ type: "streamCancel", channel, reason: "invocation-failed" });
    expect(messages.at(-1)).toEqual(LIMIT_FAILURE);
    expect(await refusals()).toBe(1);
    expect(await keptBy(store, "alice")).toBe(LIMIT);

    // Bob's bytes are his own: he stores as much as Alice did.
    const bob = await startDigest(running.url, BOB);
    await sendAcked(bob.client, bob.channel, 0n, room);
    bob.client.terminate();

    // Alice keeps as many bytes as she may: a new start is refused, definitively.
    const again = await RawClient.connect(running.url, ALICE);
    again.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await again.next()).toMatchObject({
      type: "invocationRejected",
      code: "limit-exceeded",
      retryable: false,
      message: expect.stringMatching(/at most 100000 bytes in the store/),
    });
    expect((await again.all()).closed.code).toBe(1002);
    expect(await refusals()).toBe(2);

    // Her failed session is still hers to reach: a resume's attempt record may go past the bound by a headroom.
    const back = await RawClient.connect(running.url, ALICE);
    back.send(resumeAttach("resume", accepted.sessionToken));
    expect(await back.next()).toMatchObject({ type: "invocationAccepted" });
    expect((await back.all()).messages.at(-1)).toEqual(LIMIT_FAILURE);
  });

  it("input the client sent on behind the refused item is not a gap: the connection is not failed for it, and the invocation fails with limit-exceeded", async () => {
    const store = new MemorySessionStore();
    running = await startMemoryServer({ store, limits: { maxStoredBytesPerPrincipal: LIMIT } });
    const { client, channel } = await startDigest(running.url, ALICE);
    const room = LIMIT - (await keptBy(store, "alice"));
    await sendAcked(client, channel, 0n, room);
    // A client streams without waiting for acknowledgements: the items behind the refused one are on their way.
    for (let k = 0; k < 8; k++) client.send({ type: "input-u8", channel, sequence: BigInt(room + k), payload: new Uint8Array([2]) });
    const { messages, closed } = await client.all();
    expect(messages.filter((m) => m.type === "invocationRejected")).toEqual([]);
    expect(messages.at(-1)).toEqual(LIMIT_FAILURE);
    expect(closed.code).toBe(1000);
  });

  it("an output item past the bound is never stored or sent, and fails its invocation with limit-exceeded", async () => {
    running = await startMemoryServer({ metrics: true, limits: { maxStoredBytesPerPrincipal: LIMIT } });
    // Blobs of 60 000 bytes: the session's record and one fit, a second does not.
    const alice = await RawClient.connect(running.url, ALICE);
    alice.send(demoStart("blobs", v.record(v.u32(3), v.u32(60_000))));
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
    bob.send(demoStart("blobs", v.record(v.u32(1), v.u32(60_000))));
    const bobs = (await bob.all()).messages;
    expect(bobs.filter((m) => m.type === "output-binary")).toHaveLength(1);
    expect(bobs.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a result past the bound is never stored or sent, and fails its invocation with limit-exceeded", async () => {
    const store = new MemorySessionStore();
    running = await startMemoryServer({ store, metrics: true, limits: { maxStoredBytesPerPrincipal: LIMIT } });
    // Alice's input leaves ten bytes: less than any `digest` result (a count and a SHA-256 in hex).
    const { client, channel } = await startDigest(running.url, ALICE);
    const input = LIMIT - (await keptBy(store, "alice")) - 10;
    await sendAcked(client, channel, 0n, input);
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(input) });
    const { messages } = await client.all();
    expect(messages.some((m) => m.type === "invocationResult")).toBe(false);
    expect(messages.at(-1)).toEqual(LIMIT_FAILURE);
    expect(await refusals()).toBe(1);
    expect(await keptBy(store, "alice")).toBe(LIMIT - 10);
  });

  it("a start whose own record would go past the bound is refused: its constructor parameters are kept for as long as the session", async () => {
    running = await startMemoryServer({ metrics: true, limits: { maxStoredBytesPerPrincipal: LIMIT } });
    const alice = await RawClient.connect(running.url, ALICE);
    const large = demoStart("count", v.record(v.u32(1), v.u32(0)));
    alice.send({ ...large, selector: { ...large.selector, constructorParameters: v.record(v.str("x".repeat(LIMIT))) } });
    expect(await alice.next()).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
    expect(await refusals()).toBe(1);
    // Nothing was kept for it: a start of ordinary size goes through.
    const again = await RawClient.connect(running.url, ALICE);
    again.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect((await again.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("each takeover's attempt record counts: a loop of takeovers is refused at the bound and its headroom for attempts, while an exact replay of an accepted one is not", async () => {
    const store = new MemorySessionStore();
    const limit = 8_000;
    running = await startMemoryServer({ store, metrics: true, limits: { maxStoredBytesPerPrincipal: limit } });
    const first = await RawClient.connect(running.url, ALICE);
    // An invocation that stays running (its first item is a minute away).
    first.send(demoStart("count", v.record(v.u32(1), v.u32(60_000))));
    const { sessionToken } = await first.nextOf("invocationAccepted");
    const taken: RawClient[] = [first];
    let last: ReturnType<typeof resumeAttach> | undefined;
    for (;;) {
      const client = await RawClient.connect(running.url, ALICE);
      const takeover = resumeAttach("takeover", sessionToken);
      client.send(takeover);
      const answer = await client.next();
      taken.push(client);
      if (answer?.type !== "invocationAccepted") {
        expect(answer).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
        break;
      }
      last = takeover;
      expect(taken.length).toBeLessThan((limit + attemptHeadroom(limit)) / 256 + 2);
    }
    // Every accepted takeover was counted, up to the bound and its headroom for attempts; the refused one was not.
    const kept = await keptBy(store, "alice");
    expect(kept).toBeGreaterThan(limit);
    expect(kept).toBeLessThanOrEqual(limit + attemptHeadroom(limit));
    expect(kept + 256).toBeGreaterThan(limit + attemptHeadroom(limit));
    expect(await refusals()).toBe(1);
    // The exact replay of the last accepted takeover stores nothing, and is answered.
    const replay = await RawClient.connect(running.url, ALICE);
    replay.send(last!);
    expect(await replay.next()).toMatchObject({ type: "invocationAccepted" });
    expect(await keptBy(store, "alice")).toBe(kept);
    for (const client of [...taken, replay]) client.terminate();
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
    running = await startMemoryServer({ store, now: () => clock, limits: { maxStoredBytesPerPrincipal: LIMIT, sessionRetentionMs: 200 } });
    // Alice's input leaves room for the result (a few hundred bytes), not for another session's record.
    const { client, channel } = await startDigest(running.url, ALICE);
    const input = LIMIT - (await keptBy(store, "alice")) - 1000;
    await sendAcked(client, channel, 0n, input);
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(input) });
    expect((await client.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const refused = await RawClient.connect(running.url, ALICE);
    refused.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await refused.next()).toMatchObject({ type: "invocationRejected", code: "limit-exceeded" });

    clock += 1000;
    await store.purged;
    expect(await keptBy(store, "alice")).toBe(0);
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
    running = await startMemoryServer({ store, logger, limits: { maxStoredBytesPerPrincipal: LIMIT } });
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
    const first = await startTestServer();
    expect(await digestToEnd(first.url, TOKEN, 10_000)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    await first.close();
    // What the first server left, summed by the store: the bound of the second.
    const store = new SqliteSessionStore({ dataDir: first.dataDir });
    const [kept] = await store.storedBytesByPrincipal();
    await store.close();
    expect(kept!.bytes).toBeGreaterThan(10_000);

    server = await startTestServer({ limits: { maxStoredBytesPerPrincipal: kept!.bytes }, dataDir: first.dataDir });
    const refused = await RawClient.connect(server.url, TOKEN);
    refused.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await refused.next()).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
    expect(await digestToEnd(server.url, "other-token", 6)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});
