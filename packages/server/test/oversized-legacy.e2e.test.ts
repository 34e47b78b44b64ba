/**
 * Output items too large for any message, in stores written before the size
 * check: a log that
 * already holds an output item no message can carry. Phase one writes such
 * a log by turning the producers' check off (as the server before the fix
 * had none); phase two restarts on the same SQLite directory and attaches:
 * the item reads as its stream's producer-error terminal, and the session
 * finishes instead of failing every attachment with internal-error.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { inspectToken } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import { SqliteSessionStore } from "../src/index.js";
import { RawClient, demoStart, startTestServer, v, resumeAttach } from "./helpers.js";

const legacy = vi.hoisted(() => ({ noSizeCheck: false }));
vi.mock("../src/invocation/message-room.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/invocation/message-room.js")>();
  return {
    ...real,
    outputItemFits: (...args: Parameters<typeof real.outputItemFits>) => legacy.noSizeCheck || real.outputItemFits(...args),
  };
});

const MiB = 1024 * 1024;
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe("a log written before the size check", () => {
  it("an unsendable item already committed reads as its stream's producer-error terminal; the session finishes on every attachment", async () => {
    legacy.noSizeCheck = true;
    const before = await startTestServer();
    const dataDir = before.dataDir;
    const client = await RawClient.connect(before.url);
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = (await client.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("x".repeat(8 * MiB - 200)) });
    client.send({ type: "inputStreamEnd", channel, sequence: 1n });
    // The producer commits the item and then its ok terminal with the check off;
    // the finish follows them.
    await client.nextOf("invocationFinished");
    client.terminate();
    await before.close();
    legacy.noSizeCheck = false;

    const store = new SqliteSessionStore({ dataDir });
    const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
    const output = (await store.listStreams(sessionId)).find((s) => s.direction === "output");
    const log = output === undefined ? [] : await store.readOutput(output.streamId, 0n, 10);
    await store.close();
    // The legacy condition: an item of 8 MiB − 200 bytes and more in the log.
    expect(log.map((e) => [e.event, e.sequence])).toEqual([
      ["item", 0n],
      ["terminal", 1n],
    ]);

    const after = await startTestServer({ dataDir });
    cleanup = () => after.dispose();
    for (let attachment = 0; attachment < 2; attachment++) {
      const late = await RawClient.connect(after.url);
      late.send(resumeAttach("takeover", accepted.sessionToken));
      const { messages, closed } = await late.all();
      expect(messages.map((m) => m.type)).not.toContain("invocationRejected");
      expect(messages.filter((m) => m.type === "outputStreamItem")).toEqual([]);
      expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
        sequence: 0n,
        outcome: { kind: "error", code: "producer-error", message: "an output item does not fit in one 8 MiB message" },
      });
      // The restart finished the interrupted invocation; the finish now reaches the client.
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished" });
      expect(closed.code).toBe(1000);
    }
  });
});
