/**
 * The session byte budget (decisions §6, protocol section 12) over a real
 * socket, with a small budget: what a session has accepted and not handed
 * on, input queued plus output recorded and unsent, stays within it. Nothing
 * here measures time or memory: the checks wait until the server stops
 * accepting and then compare counts (bench/unread-output.mjs in the client
 * package measures the memory).
 */
import { afterEach, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { Keyring } from "@golem-stream/tokens";
import { MemorySessionStore, createDemoHost, createSessionServer, type InputChunk, type NewStream, type OutputEvent, type SessionServer } from "../src/index.js";
import { RawClient, TOKEN, demoStart, outputValues, settle, v } from "./helpers.js";

const BUDGET = 2 * 1024 * 1024;
const ITEM = 32 * 1024;
/** Item i: its number, then one letter to ITEM characters (ASCII). */
const item = (i: number): string => `<${i}>`.padEnd(ITEM, String.fromCharCode(97 + (i % 26)));
const reversed = (text: string): string => Array.from(text).reverse().join("");

/** The in-memory store (everything it holds is process memory), counting commits and what the output pumps read. */
class CountingStore extends MemorySessionStore {
  /** Input items committed: what the ACK high-water reports. */
  inputCommitted = 0;
  /** Input payload bytes handed to the store and not yet committed. */
  inputUncommittedBytes = 0;
  maxInputUncommittedBytes = 0;
  /** The end of the furthest output read (items read by the pumps, about to be sent). */
  outputRead = 0n;
  /** While set, input commits wait for it. */
  gate: Promise<void> | undefined;

  override async acceptInput(chunk: InputChunk, introduced: readonly NewStream[]): Promise<void> {
    this.inputUncommittedBytes += chunk.data.length;
    this.maxInputUncommittedBytes = Math.max(this.maxInputUncommittedBytes, this.inputUncommittedBytes);
    if (this.gate !== undefined) await this.gate;
    await super.acceptInput(chunk, introduced);
    this.inputUncommittedBytes -= chunk.data.length;
    this.inputCommitted += Number(chunk.itemCount);
  }

  override async readOutput(streamId: string, from: bigint, limit: number, maxBytes?: number): Promise<OutputEvent[]> {
    const events = await super.readOutput(streamId, from, limit, maxBytes);
    for (const event of events) {
      if (event.event === "item" && event.sequence + event.itemCount > this.outputRead) this.outputRead = event.sequence + event.itemCount;
    }
    return events;
  }
}

describe("session byte budget", () => {
  let server: SessionServer | undefined;
  let store: CountingStore;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(): Promise<string> {
    store = new CountingStore();
    server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate("k1"),
      authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
      limits: { maxQueuedBytesPerSession: BUDGET },
    });
    return (await server.listen()).url;
  }

  /** Starts `reverse`; returns the client, the input channel and the output channel. */
  async function reverse(url: string): Promise<{ client: RawClient; input: number; output: number }> {
    const client = await RawClient.connect(url);
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const result = await client.nextOf("invocationResult");
    return { client, input: accepted.mappings[0]!.channel, output: result.mappings[0]!.channel };
  }

  function sendAll(client: RawClient, channel: number, items: number): void {
    for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(item(i)) });
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items) });
  }

  function expectAllReversed(messages: Parameters<typeof outputValues>[0], channel: number, items: number): void {
    const rejected = messages.find((m) => m.type === "invocationRejected");
    expect(rejected).toBeUndefined();
    const values = outputValues(messages, channel);
    expect(values).toHaveLength(items);
    values.forEach((value, i) => {
      if (value.kind !== "string" || value.value !== reversed(item(i))) throw new Error(`output item ${i} is not input item ${i} reversed`);
    });
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  }

  it("with its output unread, accepted input not yet sent back as output stays within the budget; reading again delivers all of it", async () => {
    // 1200 items of 32 KiB (37.5 MiB): far more than the socket buffers, the
    // budget (2 MiB) and the window of 256 output items (8 MiB) hold. Before
    // output was charged to the budget, the server accepted the 256-item
    // window of unsent output plus a full budget of queued input: about
    // 10 MiB held in the store and the input queue.
    const url = await start();
    const items = 1200;
    const { client, input, output } = await reverse(url);
    client.socket.pause();
    sendAll(client, input, items);

    const accepted = await settle(() => store.inputCommitted, 50);
    expect(accepted).toBeLessThan(items);
    // What the server accepted and the output pumps have not yet read: the
    // input queue, the agent's item, the output recorded and unsent.
    const held = (accepted - Number(store.outputRead)) * ITEM;
    expect(held).toBeLessThanOrEqual(BUDGET + 4 * ITEM);

    client.socket.resume();
    const { messages } = await client.all();
    const acks = messages.filter((m) => m.type === "inputStreamAck");
    expect(acks.at(-1)).toMatchObject({ highestContiguousSequence: BigInt(items), terminal: true });
    expectAllReversed(messages, output, items);
  });

  it("input permits last until the commit: with commits held, the store is handed at most the budget", async () => {
    // The output is read, so only the commits can hold input back. Before,
    // the permits went back when the agent took an item, so a slow disk (a
    // held commit here) let the store's copies grow with everything sent.
    const url = await start();
    let open!: () => void;
    store.gate = new Promise((resolve) => (open = resolve));
    const items = 600;
    const { client, input, output } = await reverse(url);
    sendAll(client, input, items);

    const handed = await settle(() => store.maxInputUncommittedBytes, 50);
    expect(store.inputCommitted).toBe(0);
    expect(handed).toBeLessThanOrEqual(BUDGET);

    open();
    store.gate = undefined;
    const { messages } = await client.all();
    const acks = messages.filter((m) => m.type === "inputStreamAck");
    expect(acks.at(-1)).toMatchObject({ highestContiguousSequence: BigInt(items), terminal: true });
    expectAllReversed(messages, output, items);
  });

  it("a session whose budget is held by unsent output still takes the client's cancel of it", async () => {
    // Everything sent fits in the socket buffers and the budget, which the
    // unsent output holds: the cancels that follow are read and applied.
    const url = await start();
    const { client, input, output } = await reverse(url);
    client.socket.pause();
    const items = 400;
    for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel: input, sequence: BigInt(i), value: v.str(item(i)) });
    await settle(() => store.inputCommitted, 50);
    client.send({ type: "streamCancel", channel: output, reason: "consumer-drop" });
    client.send({ type: "streamCancel", channel: input, reason: "consumer-drop" });
    client.socket.resume();
    const { messages } = await client.all();
    expect(messages.find((m) => m.type === "outputStreamEnd" && m.channel === output)).toMatchObject({
      outcome: { kind: "cancelled", reason: "consumer-drop" },
    });
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });
});
