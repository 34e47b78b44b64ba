/**
 * A client's `streamCancel` that the server has read must not be lost to
 * the input in front of it. An agent that stops reading leaves the
 * connection's messages waiting for room (section 12); the client that gives
 * up sends its cancellations and closes, and the server's close frame tells
 * it everything before the close was read (client.md §10a). Cancellations
 * read that way are applied even though the input in front of them never
 * will be. (A cancel on a new connection goes through even while the
 * session's budget is spent: in-memory.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { Pauses, RawClient, demoStart, v, resumeAttach } from "./helpers.js";
import { resetGate, startProbeServer } from "./probe-server.js";

let probe: Awaited<ReturnType<typeof startProbeServer>>;
const pauses = new Pauses();
beforeAll(async () => {
  probe = await startProbeServer({}, undefined, undefined, [pauses.observer]);
});
afterAll(async () => {
  await probe.dispose();
});

function gateStart() {
  const base = demoStart("gate", v.record(v.stream(randomUUID())));
  return { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
}

/** The input high-water the client's ACKs have reported so far. */
function acceptedItems(client: RawClient): number {
  const last = client.received.filter((m) => m.type === "inputStreamAck").at(-1);
  return last?.type === "inputStreamAck" ? Number(last.highestContiguousSequence) : 0;
}

describe("a cancel behind input the agent does not read", () => {
  it("is applied when the client closes after it, although the input in front of it never is", async () => {
    const open = resetGate();
    try {
      const client = await RawClient.connect(probe.url);
      client.send(gateStart());
      const accepted = await client.nextOf("invocationAccepted");
      const channel = accepted.mappings[0]!.channel;
      // 256 fill the agent's queue; the next one waits for room, and the socket is still read.
      const items = 257;
      pauses.reset();
      for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
      await pauses.reached("input-queue");
      await client.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 256n);
      expect(acceptedItems(client)).toBe(256);
      client.send({ type: "streamCancel", channel, reason: "cancelled" });
      client.close();
      const { closed } = await client.all();
      expect(closed.code).toBe(1005); // our close had no status: the server answered it (not 1006)

      // Another process takes the session over: the input is terminal at what was accepted.
      const next = await RawClient.connect(probe.url);
      next.send(resumeAttach("takeover", accepted.sessionToken));
      const again = await next.nextOf("invocationAccepted");
      expect(again.mappings[0]!.inputHighWater).toEqual({ sequence: 256n, terminal: true });
      open();
      const { messages } = await next.all();
      expect(messages.at(-1)?.type).toBe("invocationFinished");
    } finally {
      open();
    }
  });
});
