/**
 * Cluster scenarios (cluster-scenarios.ts), resuming at another node than the owner: the
 * detached-session timeout across nodes, input sent partly at each node, the
 * client coming back to the owner, an upload continued from the high-water at
 * another node.
 */
import { randomUUID, createHash } from "node:crypto";
import type { ServerMessage } from "@golem-stream/wire";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { Logger } from "../options.js";
import { demoStart, outputValues, v } from "./demo-messages.js";
import { RawClient } from "./raw-client.js";
import { intercepting, sendTexts, sendTextsThenEnd, sleep, UNTIL_SILENT } from "./cluster-harness.js";
import type { Accepted, ClusterHarness } from "./cluster-harness.js";
import type { TestApi } from "./store-contract.js";

export function resumeScenarios(api: TestApi, cluster: ClusterHarness): void {
  const { it, expect } = api;
  const { startCluster, resume, startThenResume } = cluster;
  it("detachedSessionTimeoutMs: a client attached at another node than the owner keeps the session, even with nothing flowing; once it leaves, the owner gives the session up", async () => {
    // Long enough that the serving node's `alive` changes (a quarter of it apart) reach the owner
    // through a loaded database in time; the test waits three timeouts.
    const TIMEOUT_MS = 1500;
    const givenUp: string[] = [];
    const waiters: (() => void)[] = [];
    const logger = (index: number): Logger => {
      const note = (_message: string, fields?: Readonly<Record<string, unknown>>): void => {
        if (fields?.["event"] !== "session.given-up") return;
        givenUp.push(String.fromCharCode(97 + index));
        for (const wake of waiters.splice(0)) wake();
      };
      return { info: note, warn: note, error: note };
    };
    const [a, b] = (await startCluster(2, { logger, limits: { detachedSessionTimeoutMs: TIMEOUT_MS } })).nodes;
    // reverse with its input open and nothing sent: only B's word tells A that the client is there.
    const { client } = await startThenResume(a!, b!, demoStart("reverse", v.record(v.stream(randomUUID()))));
    const reaccepted = (await client.nextOf("invocationAccepted")) as Accepted;
    await sleep(3 * TIMEOUT_MS);
    expect(givenUp).toEqual([]);
    const input = reaccepted.mappings.find((m) => m.direction === "input")!;
    client.send({ type: "inputStreamItem", channel: input.channel, sequence: 0n, value: v.str("abc") });
    for (;;) {
      const message = await client.next();
      if (message.type === "outputStreamItem") {
        expect(message.value).toEqual(v.str("cba"));
        break;
      }
    }

    const given = new Promise<void>((resolve) => waiters.push(resolve));
    client.terminate();
    await given;
    expect(givenUp).toEqual(["a"]);
    const back = await RawClient.connect(b!.url);
    back.send(resume("resume", reaccepted.sessionToken));
    const { messages } = await back.all(UNTIL_SILENT);
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      outcome: { kind: "cancelled", reason: "transport-detached" },
    });
  }, 30_000);

  it("reverse: items sent at node A, the connection cut, the rest sent at node B; every output in order, no gap", async () => {
    const [a, b] = (await startCluster(2)).nodes;
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    const input = accepted.mappings[0]!.channel;
    first.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("abc") });
    first.send({ type: "inputStreamItem", channel: input, sequence: 1n, value: v.str("def") });
    const result = await first.nextOf("invocationResult");
    const output = result.mappings[0]!.channel;
    let cursor = "";
    for (let seen = 0; seen < 2;) {
      const message = await first.next();
      if (message.type === "outputStreamItem" && message.channel === output) {
        seen++;
        cursor = message.cursorToken;
      }
    }
    first.terminate();

    const second = await RawClient.connect(b!.url);
    second.send(resume("resume", accepted.sessionToken, [cursor]));
    const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
    const inputMapping = reaccepted.mappings.find((m) => m.direction === "input")!;
    expect(inputMapping.inputHighWater).toEqual({ sequence: 2n, terminal: false });
    second.send({ type: "inputStreamItem", channel: inputMapping.channel, sequence: 2n, value: v.str("ghi") });
    second.send({ type: "inputStreamEnd", channel: inputMapping.channel, sequence: 3n });
    const { messages, closed } = await second.all(UNTIL_SILENT);
    const reResult = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    expect(
      outputValues(messages, reResult.mappings[0]?.channel ?? reaccepted.mappings.find((m) => m.direction === "output")!.channel),
    ).toEqual([v.str("ihg")]);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);
  });

  it("the client comes back to the owner while it still feeds its agent what B committed: the agent gets every item once, in order", async () => {
    // Seen in methods-under-cuts as a short digest: A accepted the resent
    // items directly while its feed of B's items from the store was behind,
    // handed them to the agent first, and the feed then skipped B's items.
    let feedHeld = true;
    let releaseFeed!: () => void;
    const feedReleased = new Promise<void>((resolve) => (releaseFeed = resolve));
    const slowFeedAtA = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index !== 0
        ? store
        : intercepting(store, {
            // A reads B's items back only after it has taken the client's next item itself.
            readInput: async (...args) => {
              if (feedHeld) await feedReleased;
              return store.readInput(...args);
            },
            acceptInput: (chunk, introduced) => {
              const accepted = store.acceptInput(chunk, introduced);
              if (chunk.sequence >= 6n) setTimeout(releaseFeed, 50);
              return accepted;
            },
          });
    const [a, b] = (await startCluster(2, { wrap: slowFeedAtA })).nodes;
    const texts = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg", "hhhhhhhh"];
    const send = async (client: RawClient, channel: number, from: number, to: number): Promise<void> => {
      sendTexts(client, channel, texts, from, to);
      await client.waitFor((m) => m.type === "inputStreamAck" && m.channel === channel && m.highestContiguousSequence >= BigInt(to - 1));
    };
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    await send(first, accepted.mappings[0]!.channel, 0, 3);
    first.terminate();

    const atB = await RawClient.connect(b!.url);
    atB.send(resume("resume", accepted.sessionToken));
    const acceptedAtB = (await atB.nextOf("invocationAccepted")) as Accepted;
    await send(atB, acceptedAtB.mappings[0]!.channel, 3, 6);
    atB.terminate();

    const again = await RawClient.connect(a!.url);
    again.send(resume("resume", acceptedAtB.sessionToken));
    const mapping = ((await again.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
    expect(mapping.inputHighWater).toEqual({ sequence: 6n, terminal: false });
    sendTextsThenEnd(again, mapping.channel, texts, 6);
    const { messages } = await again.all(UNTIL_SILENT);
    feedHeld = false;
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
    expect(fields.map((field) => field.value)).toEqual([String(texts.length), String(texts.join("").length)]);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("digest: half the bytes uploaded at A, the rest from the high-water at B; the digest is of every byte once", async () => {
    const [a, b] = (await startCluster(2)).nodes;
    const data = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => (i * 31) & 0xff);
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("digest", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    const channel = accepted.mappings[0]!.channel;
    const half = 1024 * 1024 + 5;
    first.send({ type: "input-u8", channel, sequence: 0n, payload: data.subarray(0, 1024 * 1024) });
    first.send({ type: "input-u8", channel, sequence: 1048576n, payload: data.subarray(1024 * 1024, half) });
    await first.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(half));
    first.terminate();

    const second = await RawClient.connect(b!.url);
    second.send(resume("resume", accepted.sessionToken));
    const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
    const mapping = reaccepted.mappings[0]!;
    const from = Number(mapping.inputHighWater!.sequence);
    expect(from).toBe(half);
    for (let at = from; at < data.length; at += 1024 * 1024) {
      second.send({
        type: "input-u8",
        channel: mapping.channel,
        sequence: BigInt(at),
        payload: data.subarray(at, Math.min(at + 1024 * 1024, data.length)),
      });
    }
    second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(data.length) });
    const { messages } = await second.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
    expect(fields[0]!.value).toBe(String(data.length));
    expect(fields[1]!.value).toBe(createHash("sha256").update(data).digest("hex"));
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });
}
