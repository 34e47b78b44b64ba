/**
 * A server process restart loses no accepted input and no produced output:
 * the same SQLite directory is reopened, the client resumes and reads
 * everything; the interrupted invocation is finished with invocation-failed.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { RawClient, demoStart, outputValues, startTestServer, v } from "./helpers.js";

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-restart-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("restart on the same data directory", () => {
  it("keeps produced output and accepted input; running invocations finish with invocation-failed", async () => {
    const before = await startTestServer({ dataDir });
    expect(statSync(join(dataDir, "keyring.json")).mode & 0o777).toBe(0o600);

    const counter = await RawClient.connect(before.url);
    counter.send(demoStart("count", v.record(v.u32(100_000), v.u32(1))));
    const counterAccepted = await counter.nextOf("invocationAccepted");
    const result = await counter.nextOf("invocationResult");
    const channel = result.mappings[0]!.channel;
    let produced = 0;
    while (produced < 5) {
      const m = await counter.next();
      if (m.type === "outputStreamItem" && m.channel === channel) produced++;
    }

    const reverser = await RawClient.connect(before.url);
    reverser.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const reverseAccepted = await reverser.nextOf("invocationAccepted");
    const input = reverseAccepted.mappings[0]!.channel;
    reverser.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("kept") });
    expect(await reverser.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: 1n });

    await before.close();

    const after = await startTestServer({ dataDir });
    try {
      const resumed = await RawClient.connect(after.url);
      resumed.send({ type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: [], sessionToken: counterAccepted.sessionToken });
      const { messages, closed } = await resumed.all();
      expect(closed.code).toBe(1000);
      const replayResult = messages.find((m) => m.type === "invocationResult");
      if (replayResult?.type !== "invocationResult") throw new Error("no result");
      const items = outputValues(messages, replayResult.mappings[0]!.channel).map((x) => x.value as number);
      expect(items.length).toBeGreaterThanOrEqual(5);
      expect(items).toEqual(Array.from({ length: items.length }, (_, i) => i));
      expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
        outcome: { kind: "cancelled", reason: "invocation-failed" },
        sequence: BigInt(items.length),
      });
      expect(messages.at(-1)).toEqual({
        type: "invocationFinished",
        outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" },
      });

      const inputResume = await RawClient.connect(after.url);
      inputResume.send({ type: "resumeAttach", attemptId: randomUUID(), operation: "takeover", outputCursors: [], sessionToken: reverseAccepted.sessionToken });
      const reaccepted = await inputResume.nextOf("invocationAccepted");
      const inputMapping = reaccepted.mappings.find((m) => m.direction === "input");
      expect(inputMapping?.inputHighWater).toEqual({ sequence: 1n, terminal: true });
      expect((await inputResume.all()).messages.at(-1)?.type).toBe("invocationFinished");
    } finally {
      await after.close();
    }
  });
});
