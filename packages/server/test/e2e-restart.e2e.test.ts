/**
 * A server process restart loses no accepted input and no produced output:
 * the same SQLite directory is reopened, the client resumes and reads
 * everything; an interrupted invocation that is not re-run (here: re-runs
 * off, `maxReplays: 0`; replay.test.ts re-runs them) is finished with
 * invocation-failed.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import type { ServerMessage } from "@golem-stream/wire";
import { RawClient, demoStart, outputValues, startTestServer, v, resumeAttach } from "./helpers.js";
import { recordingLogger } from "./support/recording-logger.js";

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-restart-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("restart on the same data directory", () => {
  it("keeps produced output and accepted input; running invocations not re-run finish with invocation-failed", async () => {
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

    const log = recordingLogger();
    const after = await startTestServer({ dataDir, limits: { maxReplays: 0 }, logger: log.logger });
    try {
      // Each interrupted invocation that fails says why in the log, as the client is told only that it failed.
      const interrupted = log.lines.filter((line) => line["event"] === "invocation.interrupted");
      expect(interrupted.map((line) => [typeof line["session"], line["method"], line["reason"]]).sort()).toEqual([
        ["string", "count", "it has no re-runs left (limits.maxReplays 0)"],
        ["string", "reverse", "it has no re-runs left (limits.maxReplays 0)"],
      ]);
      expect(log.lines.find((line) => line["event"] === "recovery.interrupted")).toMatchObject({ count: 2 });
      const resumed = await RawClient.connect(after.url);
      resumed.send(resumeAttach("resume", counterAccepted.sessionToken));
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
      inputResume.send(resumeAttach("takeover", reverseAccepted.sessionToken));
      const reaccepted = await inputResume.nextOf("invocationAccepted");
      const inputMapping = reaccepted.mappings.find((m) => m.direction === "input");
      expect(inputMapping?.inputHighWater).toEqual({ sequence: 1n, terminal: true });
      expect((await inputResume.all()).messages.at(-1)?.type).toBe("invocationFinished");
    } finally {
      await after.close();
    }
  });

  it.each([
    { files: "written with direct I/O (the default on Linux)", payloadDirectIo: true },
    { files: "written through the page cache", payloadDirectIo: false },
  ])(
    "large u8 payloads (kept in payload files $files) are compared on resend and replayed after a restart, byte for byte",
    async ({ payloadDirectIo }) => {
      const dir = mkdtempSync(join(tmpdir(), "golem-stream-restart-u8-"));
      // Above the 64 KiB payload file threshold, and not a multiple of a disk block: a direct write pads it.
      const batch = 200 * 1024 + 1;
      const input = Array.from({ length: 3 }, (_, b) =>
        Uint8Array.from({ length: batch }, (_, i) => ((b * batch + i) % 1000 === 999 ? 0x0a : 0x61 + ((b + i) % 26))),
      );
      const upperOf = (bytes: Uint8Array) => Buffer.from(bytes.map((x) => (x >= 0x61 && x <= 0x7a ? x - 0x20 : x)));
      const expectedUpper = Buffer.concat(input.map(upperOf));
      const upperBytes = (messages: readonly ServerMessage[], channel: number) =>
        Buffer.concat(messages.flatMap((m) => (m.type === "output-u8" && m.channel === channel ? [Buffer.from(m.payload)] : [])));
      try {
        const before = await startTestServer({ dataDir: dir, payloadDirectIo });
        const first = await RawClient.connect(before.url);
        first.send(demoStart("split", v.record(v.stream(randomUUID()))));
        const accepted = await first.nextOf("invocationAccepted");
        const channel = accepted.mappings[0]!.channel;
        let sequence = 0n;
        for (const payload of input) {
          first.send({ type: "input-u8", channel, sequence, payload });
          sequence += BigInt(payload.length);
        }
        await first.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === sequence);
        const result = await first.nextOf("invocationResult");
        const upper = result.mappings[0]!.channel;
        await first.waitFor(() => upperBytes(first.received, upper).length === expectedUpper.length);
        expect(upperBytes(first.received, upper).equals(expectedUpper)).toBe(true);
        const payloadFiles = readdirSync(join(dir, "payloads"));
        expect(payloadFiles).toHaveLength(1);
        // Every direct write ends on a block boundary; through the page cache the file ends where its last payload does.
        const directlyWritten = payloadDirectIo && process.platform === "linux";
        expect(statSync(join(dir, "payloads", payloadFiles[0]!)).size % 4096 === 0).toBe(directlyWritten);

        // A takeover resends the first batch (compared with the file) and a changed second one (refused).
        const second = await RawClient.connect(before.url);
        second.send(resumeAttach("takeover", accepted.sessionToken));
        const retaken = await second.nextOf("invocationAccepted");
        const inputChannel = retaken.mappings.find((m) => m.direction === "input")!.channel;
        second.send({ type: "input-u8", channel: inputChannel, sequence: 0n, payload: input[0]! });
        expect(await second.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: sequence, terminal: false });
        const changed = Uint8Array.from(input[1]!);
        changed[batch - 1] = (changed[batch - 1] ?? 0) ^ 1;
        second.send({ type: "input-u8", channel: inputChannel, sequence: BigInt(batch), payload: changed });
        const refused = await second.all();
        expect(refused.messages.at(-1)).toMatchObject({ type: "invocationRejected", code: "input-conflict" });
        expect(refused.closed.code).toBe(1002);
        await before.close();

        const after = await startTestServer({ dataDir: dir, payloadDirectIo });
        try {
          const replay = await RawClient.connect(after.url);
          replay.send(resumeAttach("takeover", retaken.sessionToken));
          // split is replayable: the restarted server re-ran it over the stored input (its output
          // compared with the payload files) and it waits for the rest of the input.
          const reattached = await replay.nextOf("invocationAccepted");
          const input = reattached.mappings.find((m) => m.direction === "input")!;
          expect(input.inputHighWater).toEqual({ sequence, terminal: false });
          replay.send({ type: "inputStreamEnd", channel: input.channel, sequence });
          const { messages } = await replay.all();
          const replayed = messages.find((m) => m.type === "invocationResult");
          if (replayed?.type !== "invocationResult") throw new Error("no result replayed");
          expect(upperBytes(messages, replayed.mappings[0]!.channel).equals(expectedUpper)).toBe(true);
          expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
        } finally {
          await after.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
