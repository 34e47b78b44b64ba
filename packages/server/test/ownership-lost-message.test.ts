/**
 * A write made for a client's message (an input's end here) refused for this node's ownership
 * epoch: another node claimed the session while this one handled the message. That is not the
 * client's fault nor this node's: the attachment ends as when the invocation's own write is
 * refused (close 1001, no `invocationRejected`), and the client resumes where the session is now.
 * It had been answered `internal-error` and closed 1011, logged as an unexpected fault.
 */
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import type { InputTerminal } from "../src/store/index.js";
import { MemorySessionStore } from "../src/index.js";
import { OwnershipLostError } from "../src/store/ownership.js";
import { demoStart, v } from "./helpers.js";
import { memoryHarness } from "./support/memory-session.js";

/** A store whose next input end is refused as if the session had been claimed at epoch 2. */
class ClaimedUnderTheEnd extends MemorySessionStore {
  override async endInput(streamId: string, terminal: InputTerminal, epoch?: bigint): Promise<void> {
    throw new OwnershipLostError(undefined, epoch ?? 1n, 2n);
  }
}

it("an input end the store refuses for a later ownership epoch closes the attachment 1001, as the session moved, with no invocationRejected", async () => {
  const { open } = memoryHarness({ store: new ClaimedUnderTheEnd() });
  const { transport, send } = open();
  send(demoStart("tally", v.record(v.stream(randomUUID()))));
  await transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
  const accepted = transport.sent.find((m) => m.type === "invocationAccepted");
  const channel = accepted?.type === "invocationAccepted" ? accepted.mappings[0]!.channel : 0;
  send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("ab") });
  send({ type: "inputStreamEnd", channel, sequence: 1n });
  expect(await transport.expectClose("the close")).toBe(1001);
  expect(transport.sent.map((m) => m.type)).not.toContain("invocationRejected");
});
