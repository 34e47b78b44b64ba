/**
 * Cluster scenarios (cluster-scenarios.ts), input across nodes: the stored-bytes bound at a
 * node that only mirrors the session, and commits of the previous
 * attachment's node that land after the client resumed elsewhere (the same
 * input, accepted once; ACKs never go back; an item the store refuses is not
 * counted).
 */
import { randomUUID } from "node:crypto";
import type { ServerMessage } from "@golem-stream/wire";
import { defineAgentType, t } from "@golem-stream/contract";
import { StaticAgentHost } from "../agent-host.js";
import { implement } from "../contracts/implement.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import { demoStart, v } from "./demo-messages.js";
import { RawClient } from "./raw-client.js";
import { intercepting, ItemCount, sendTexts, sendTextsThenEnd, sleep, UNTIL_SILENT } from "./cluster-harness.js";
import type { Accepted, Node, ClusterHarness } from "./cluster-harness.js";
import type { TestApi } from "./store-contract.js";

/** Input items that introduce input streams: the sum of every group's values. */
const groupsContract = defineAgentType({
  name: "groups",
  constructor: t.record({}),
  methods: { sum: { params: t.record({ groups: t.stream(t.record({ name: t.string(), values: t.stream(t.u32()) })) }), result: t.u32() } },
});
const groupsHost = new StaticAgentHost({
  test: {
    default: [
      implement(groupsContract, {
        async sum(_ctx, { groups }) {
          let total = 0;
          for await (const group of groups) for await (const value of group.values) total += value;
          return total;
        },
      }),
    ],
  },
});

export function inputScenarios(api: TestApi, cluster: ClusterHarness): void {
  const { it, expect } = api;
  const { startCluster, resume, startThenResume } = cluster;
  it("an input item committed at a node that only mirrors the session introduces a stream: the owner's agent reads that stream's items by its token", async () => {
    const [a, b] = (await startCluster(2, { host: groupsHost })).nodes;
    const start = demoStart("sum", v.record(v.stream(randomUUID())));
    const { client } = await startThenResume(a!, b!, {
      ...start,
      selector: { ...start.selector, application: "test", agentType: "groups", constructorParameters: v.record() },
    });
    const groups = ((await client.nextOf("invocationAccepted")) as Accepted).mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel: groups, sequence: 0n, value: v.record(v.str("a"), v.stream(randomUUID())) });
    const ack = await client.waitFor((m) => m.type === "inputStreamAck" && m.channel === groups && m.mappings.length === 1);
    const values = ack.type === "inputStreamAck" ? ack.mappings[0]!.channel : -1;
    for (const [sequence, value] of [1, 2].entries())
      client.send({ type: "inputStreamItem", channel: values, sequence: BigInt(sequence), value: v.u32(value) });
    client.send({ type: "inputStreamEnd", channel: values, sequence: 2n });
    client.send({ type: "inputStreamEnd", channel: groups, sequence: 1n });
    const { messages } = await client.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult");
    expect(result?.type === "invocationResult" ? result.result : undefined).toMatchObject({
      kind: "value",
      value: { kind: "u32", value: 3 },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("maxStoredBytesPerPrincipal: input past the bound at a node that only mirrors the session is refused there with limit-exceeded, and never stored", async () => {
    // The bound leaves room for the session's records (a few KiB) beside the first chunk, not the second.
    const [a, b] = (await startCluster(2, { limits: { maxStoredBytesPerPrincipal: 100_000 } })).nodes;
    const { client } = await startThenResume(a!, b!, demoStart("digest", v.record(v.stream(randomUUID()))));
    const reaccepted = (await client.nextOf("invocationAccepted")) as Accepted;
    const channel = reaccepted.mappings[0]!.channel;
    client.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array(90_000).fill(1) });
    await client.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 90_000n);
    client.send({ type: "input-u8", channel, sequence: 90_000n, payload: new Uint8Array(20_000).fill(2) });
    const { messages, closed } = await client.all(UNTIL_SILENT);
    expect(messages.at(-1)).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
    expect(closed.code).toBe(1002);
    // The owner's stream holds the first chunk and nothing after it.
    const back = await RawClient.connect(a!.url);
    back.send(resume("takeover", reaccepted.sessionToken));
    expect(((await back.nextOf("invocationAccepted")) as Accepted).mappings[0]!.inputHighWater).toEqual({
      sequence: 90_000n,
      terminal: false,
    });
    back.terminate();
  });

  it("input the previous attachment's node commits after the client resumed at another node (its connection cut with commits in flight) is the same input: accepted once, nothing fails", async () => {
    // Node A's commits of input take 150 ms: the client's connection to A is cut while three are in flight.
    const enteredAtA = new ItemCount();
    const settledAtA = new ItemCount();
    const slowInput = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index !== 0
        ? store
        : intercepting(store, {
            acceptInput: (...args) => {
              enteredAtA.add(args[0]);
              return sleep(150)
                .then(() => store.acceptInput(...args))
                .finally(() => settledAtA.add(args[0]));
            },
          });
    const [a, b] = (await startCluster(2, { wrap: slowInput })).nodes;
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    const channel = accepted.mappings[0]!.channel;
    sendTexts(first, channel, ["ab", "cd", "ef"]);
    await enteredAtA.reached(3n);
    first.terminate();

    // B reads the high-water before A's commits land; the client resends from it. B commits first,
    // A's commits of the same items are then refused by the store.
    const second = await RawClient.connect(b!.url);
    second.send(resume("resume", accepted.sessionToken));
    const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
    const mapping = reaccepted.mappings[0]!;
    const from = Number(mapping.inputHighWater!.sequence);
    const texts = ["ab", "cd", "ef", "gh"];
    sendTexts(second, mapping.channel, texts, from);
    // The invocation is still running when A's commits land and are refused.
    await second.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(texts.length));
    await settledAtA.reached(3n);
    second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(texts.length) });
    const { messages } = await second.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
    expect(fields.map((field) => field.value)).toEqual(["4", "8"]);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("the previous node's commits land after the new node read the high-water: the new node's own commits of those items are refused and found identical (also once the input has ended), and its ACKs never go back", async () => {
    // A's commits wait until B first commits; B's commits wait until A's have landed. So B read
    // high-water 0, the client resent from there, and the store refuses B's items 0..2 (A has
    // them) and takes item 3. Checking a refused item reads the store, so it resolves after
    // item 3's commit: the ACKs must still leave in sequence order (this failed the cluster demo),
    // and an identical item is durable even when the check finds the input already ended.
    let openOldGate!: () => void;
    const oldGate = new Promise<void>((resolve) => (openOldGate = resolve));
    let oldLanded!: () => void;
    const landed = new Promise<void>((resolve) => (oldLanded = resolve));
    let landedCount = 0;
    const enteredAtA = new ItemCount();
    const gated = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index === 0
        ? intercepting(store, {
            acceptInput: async (...args) => {
              enteredAtA.add(args[0]);
              await oldGate;
              await store.acceptInput(...args);
              if (++landedCount === 3) oldLanded();
            },
          })
        : intercepting(store, {
            acceptInput: async (...args) => {
              openOldGate();
              await landed;
              await store.acceptInput(...args);
            },
            // Reading back takes a while, as on a real database: longer than one turn of the event loop.
            readInput: (...args) => sleep(30).then(() => store.readInput(...args)),
            getStream: (...args) => sleep(30).then(() => store.getStream(...args)),
          });
    const [a, b] = (await startCluster(2, { wrap: gated })).nodes;
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    const texts = ["ab", "cd", "ef", "gh"];
    sendTexts(first, accepted.mappings[0]!.channel, texts, 0, 3);
    await enteredAtA.reached(3n);
    first.terminate();

    const second = await RawClient.connect(b!.url);
    second.send(resume("resume", accepted.sessionToken));
    const mapping = ((await second.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
    expect(mapping.inputHighWater).toEqual({ sequence: 0n, terminal: false });
    // The end follows at once: it is recorded while the refused items are still being checked.
    sendTextsThenEnd(second, mapping.channel, texts);
    const { messages } = await second.all(UNTIL_SILENT);
    const acks = messages.flatMap((m) =>
      m.type === "inputStreamAck" && m.channel === mapping.channel ? [m.highestContiguousSequence] : [],
    );
    expect(acks).toEqual([...acks].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    expect(acks.at(-1)).toBe(BigInt(texts.length));
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
    expect(fields.map((field) => field.value)).toEqual(["4", "8"]);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  /**
   * A tally started at A, whose input terminal `terminate` sends on that first connection; A
   * holds the terminal's write until the client has resumed at B (whose acceptance then says the
   * input has not ended), and the finish, so that the invocation is still running when the client
   * sends its terminal again at B, which has by then read the terminal from the store. Resolves
   * to the client at B and the input's mapping in its acceptance.
   */
  async function terminalCrossingTheResume(
    terminate: (first: RawClient, channel: number) => void | Promise<void>,
  ): Promise<{ second: RawClient; mapping: Accepted["mappings"][number] }> {
    let terminalAtA!: () => void;
    const terminalEntered = new Promise<void>((resolve) => (terminalAtA = resolve));
    let openTerminal!: () => void;
    const terminalGate = new Promise<void>((resolve) => (openTerminal = resolve));
    let bReadTheTerminal!: () => void;
    const terminalReadAtB = new Promise<void>((resolve) => (bReadTheTerminal = resolve));
    const held = new Promise<never>(() => undefined);
    const gated = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index === 0
        ? intercepting(store, {
            endInput: async (...args) => {
              terminalAtA();
              await terminalGate;
              return store.endInput(...args);
            },
            finish: () => held,
            finishWithResult: () => held,
            setResult: () => held,
          })
        : intercepting(store, {
            listStreams: async (...args) => {
              const streams = await store.listStreams(...args);
              // Once this read's caller has acted on it (microtasks), the next turn.
              if (streams.some((stream) => stream.inputTerminal !== undefined)) setImmediate(bReadTheTerminal);
              return streams;
            },
          });
    const [a, b] = (await startCluster(2, { wrap: gated })).nodes;
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    await terminate(first, accepted.mappings[0]!.channel);
    await terminalEntered;
    first.terminate();

    const second = await RawClient.connect(b!.url);
    second.send(resume("resume", accepted.sessionToken));
    const mapping = ((await second.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
    openTerminal();
    await terminalReadAtB;
    return { second, mapping };
  }

  it("the end the previous attachment's node records after the client resumed elsewhere: the client's resend of its items and end there is idempotent, not invalid-channel", async () => {
    const { second, mapping } = await terminalCrossingTheResume((first, channel) => sendTextsThenEnd(first, channel, ["ab", "cd"]));
    expect(mapping.inputHighWater).toEqual({ sequence: 2n, terminal: false });
    // What a client whose end went out on the connection before does: the end again (and any item
    // above the high-water it was given, none here; one below it, as a client may resend).
    second.send({ type: "inputStreamItem", channel: mapping.channel, sequence: 1n, value: v.str("cd") });
    second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: 2n });
    await second.waitFor((m) => m.type === "inputStreamAck" && m.terminal);
    const acks = second.received.filter((m) => m.type === "inputStreamAck");
    expect(acks.at(-1)).toMatchObject({ highestContiguousSequence: 2n, terminal: true });
    expect(second.received.map((m) => m.type)).not.toContain("invocationRejected");
    second.terminate();
  });

  it("the cancel the previous attachment's node records after the client resumed elsewhere: the client's cancel sent again there is ACKed terminal, not ignored", async () => {
    const { second, mapping } = await terminalCrossingTheResume(async (first, channel) => {
      sendTexts(first, channel, ["ab"]);
      await first.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 1n);
      first.send({ type: "streamCancel", channel, reason: "cancelled" });
    });
    expect(mapping.inputHighWater).toEqual({ sequence: 1n, terminal: false });
    second.send({ type: "streamCancel", channel: mapping.channel, reason: "cancelled" });
    await second.waitFor((m) => m.type === "inputStreamAck" && m.terminal);
    expect(second.received.map((m) => m.type)).not.toContain("invocationRejected");
    second.terminate();
  });

  it("an end sent again while the previous attachment's end is being written, and that write fails: the input has not ended, so this end is recorded and ACKed terminal", async () => {
    // The end from the first connection is held where it checks the stream (before its write
    // starts, so the resume's acceptance does not wait for it), then its write fails.
    let armed = false;
    let checkAt!: () => void;
    const checkEntered = new Promise<void>((resolve) => (checkAt = resolve));
    let openCheck!: () => void;
    const checkGate = new Promise<void>((resolve) => (openCheck = resolve));
    let endAt!: () => void;
    const endEntered = new Promise<void>((resolve) => (endAt = resolve));
    let failEnd!: () => void;
    const endFails = new Promise<void>((resolve) => (failEnd = resolve));
    let endWrites = 0;
    const failing = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index !== 0
        ? store
        : intercepting(store, {
            getStream: async (...args) => {
              if (armed) {
                armed = false;
                checkAt();
                await checkGate;
              }
              return store.getStream(...args);
            },
            endInput: async (...args) => {
              if (endWrites++ > 0) return store.endInput(...args);
              endAt();
              await endFails;
              throw new Error("the write failed");
            },
          });
    const [a] = (await startCluster(2, { wrap: failing })).nodes;
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    sendTexts(first, accepted.mappings[0]!.channel, ["ab"]);
    await first.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 1n);
    armed = true;
    first.send({ type: "inputStreamEnd", channel: accepted.mappings[0]!.channel, sequence: 1n });
    await checkEntered;
    const second = await RawClient.connect(a!.url);
    second.send(resume("resume", accepted.sessionToken));
    const mapping = ((await second.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
    expect(mapping.inputHighWater).toEqual({ sequence: 1n, terminal: false });
    openCheck();
    await endEntered;
    second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: 1n });
    // The pong comes after the server handled the end up to its wait for the write in flight.
    await new Promise<void>((resolve) => {
      second.socket.once("pong", () => resolve());
      second.socket.ping();
    });
    failEnd();
    await second.waitFor((m) => m.type === "inputStreamAck" && m.terminal);
    expect(endWrites).toBe(2);
    const acks = second.received.filter((m) => m.type === "inputStreamAck");
    expect(acks.map((m) => m.terminal)).toEqual([true]);
    second.terminate();
  });

  it("the last input item before the end is refused by the store at B: it is not counted, the end is not recorded short of it, the client resumes and the stream ends with every item", async () => {
    let refuseOnce = true;
    const refusing = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index !== 1
        ? store
        : intercepting(store, {
            acceptInput: (...args) => {
              if (args[0].sequence === 2n && refuseOnce) {
                refuseOnce = false;
                return Promise.reject(new Error("the write failed"));
              }
              return store.acceptInput(...args);
            },
          });
    const [a, b] = (await startCluster(2, { wrap: refusing })).nodes;
    const { client: atB } = await startThenResume(a!, b!, demoStart("tally", v.record(v.stream(randomUUID()))));
    const atBAccepted = (await atB.nextOf("invocationAccepted")) as Accepted;
    const mapping = atBAccepted.mappings[0]!;
    const texts = ["ab", "cd", "ef"];
    sendTextsThenEnd(atB, mapping.channel, texts);
    const first = await atB.all(UNTIL_SILENT);
    expect(first.messages.map((m) => m.type)).not.toContain("invocationFinished");
    expect(first.closed.code).not.toBe(1000);

    const atA = await RawClient.connect(a!.url);
    atA.send(resume("resume", atBAccepted.sessionToken));
    const again = ((await atA.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
    expect(again.inputHighWater).toEqual({ sequence: 2n, terminal: false });
    sendTextsThenEnd(atA, again.channel, texts, 2);
    const { messages } = await atA.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
    expect(fields.map((field) => field.value)).toEqual(["3", "6"]);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });
}
