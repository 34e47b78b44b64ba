/**
 * The session byte budget (decisions §6, protocol section 12) over a real
 * socket, with a small budget: what a session has accepted and not handed
 * on, input queued plus output recorded and unsent, stays within it. Nothing
 * here measures time or memory: the checks wait for the server's pause on
 * the session's budget (an observer's event) and then compare counts (bench/unread-output.mjs in the client
 * package measures the memory).
 */
import { afterEach, describe, expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { createSessionServer, type SessionServer } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { Pauses, TOKEN, v } from "./helpers.js";
import { sample } from "./support/operations.js";
import { CountingStore, ITEM, expectAllReversed, item, reverse, sendAll } from "./support/counting-store.js";

const BUDGET = 2 * 1024 * 1024;
describe("session byte budget", () => {
  let server: SessionServer | undefined;
  let store: CountingStore;
  let pauses: Pauses;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(): Promise<string> {
    store = new CountingStore();
    pauses = new Pauses();
    server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate("k1"),
      authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
      limits: { maxQueuedBytesPerSession: BUDGET },
      metrics: true,
      observers: [pauses.observer],
    });
    return (await server.listen()).url;
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

    // The budget is spent: the next message waits before it is decoded.
    await pauses.reached("session-budget");
    const accepted = store.inputCommitted;
    expect(accepted).toBeLessThan(items);
    // What the server accepted and has not handed to the connection: the
    // input queue, the agent's item, the output recorded and unsent. (Sent
    // output is counted by the server's own metric: the output pumps take
    // just-committed events from memory, not always from the store.)
    const sent = sample(await server!.metrics!.metrics(), "golem_stream_output_sent_items_total", { kind: "value" });
    expect(sent).toBeGreaterThan(0);
    const held = (accepted - sent) * ITEM;
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

    // The budget is spent and nothing commits: whatever the store was handed is all it gets.
    await pauses.reached("session-budget");
    const handed = store.maxInputUncommittedBytes;
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
    await pauses.reached("session-budget");
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
