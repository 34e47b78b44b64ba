/**
 * A message of a revoked connection that waits for the session's byte permits leaves the queue
 * when its attachment ends, not only when its socket closes: a half-open peer never answers the
 * close frame, so the socket stays until `ws`'s close timeout (30 s), and the permits are handed
 * out in order, so the resumed connection's messages would wait behind it all that time.
 */
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { defineAgentType, t } from "@golem-stream/contract";
import { implement, StaticAgentHost } from "../src/index.js";
import { agentStart, resumeAttach, v } from "./helpers.js";
import { memoryHarness } from "./support/memory-session.js";

let release!: () => void;
const reading = new Promise<void>((resolve) => (release = resolve));

const holder = defineAgentType({
  name: "holder",
  constructor: t.record({}),
  methods: { count: { params: t.record({ input: t.stream(t.string()) }), result: t.u32() } },
});
const host = new StaticAgentHost({
  test: {
    default: [
      implement(holder, {
        async count(_ctx, { input }) {
          // Reads nothing until the test says so: what it was handed holds the session's permits.
          await reading;
          let items = 0;
          for await (const _item of input) items++;
          return items;
        },
      }),
    ],
  },
});

it("a revoked connection's message waiting for permits does not hold back the resumed connection's (its socket never closes)", async () => {
  // Each 1 500-character item is charged about 3 KiB (twice its text): one fits the budget, and
  // leaves enough beside it for an end, not for a second item.
  const { open, store } = memoryHarness({ limits: { maxQueuedBytesPerSession: 4096 }, host });
  const first = open();
  // A half-open peer: the server's close is never answered, so the connection never closes.
  first.transport.onClosed = undefined;
  first.send(agentStart("test", "holder", "count", v.record(v.stream(randomUUID()))));
  await first.transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
  const accepted = first.transport.sent[0];
  if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
  const channel = accepted.mappings[0]!.channel;
  const item = "x".repeat(1500);
  first.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str(item) });
  await first.transport.expect("the first item acknowledged", (sent) => sent.some((m) => m.type === "inputStreamAck"));
  // This one waits for permits the agent holds (it reads nothing yet).
  first.send({ type: "inputStreamItem", channel, sequence: 1n, value: v.str(item) });

  const second = open();
  second.send(resumeAttach("resume", accepted.sessionToken));
  await second.transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
  expect(first.transport.sent.some((m) => m.type === "attachmentRevoked")).toBe(true);
  // The end (about 140 bytes of permits) fits beside the first item: it is recorded and
  // acknowledged while the agent still reads nothing, unless the first connection's waiter,
  // first in line, keeps it waiting.
  second.send({ type: "inputStreamEnd", channel, sequence: 1n });
  await second.transport.expect("the end acknowledged", (sent) => sent.some((m) => m.type === "inputStreamAck" && m.terminal));
  release();
  await second.transport.expect("the result", (sent) => sent.some((m) => m.type === "invocationFinished"));
  expect(second.transport.sent.find((m) => m.type === "invocationResult")).toMatchObject({
    result: { kind: "value", value: { kind: "u32", value: 1 } },
  });
  await store.close();
});
