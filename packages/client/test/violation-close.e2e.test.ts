/**
 * The close code after a server violation the client detected (protocol 11: "A framing or state
 * violation ... closes the WebSocket with code 1002"), against a scripted server over real
 * WebSockets on loopback. Undecodable bytes already closed 1002 (the transport's decoder); a
 * violation the session found in a well-formed message closed 1000, as a normal end does.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ServerMessage } from "@golem-stream/wire";
import { createClient } from "../src/index.js";
import { acceptanceOf, echo, noParams, okEnd, outputMapping, streamResult, u32Item } from "./support/fixtures.js";
import { startFakeServer, type FakeServer } from "./support/fake-session-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A `count` call whose stream the server announces in the result, then `script`; how the client closed, and how the call ended. */
async function closeAfter(script: readonly ServerMessage[]) {
  server = await startFakeServer(async (peer) => {
    const start = await peer.next();
    if (start.type !== "invocationStart") throw new Error(`expected a start, got ${start.type}`);
    peer.send(acceptanceOf(start, [], { sessionToken: "s" }));
    peer.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    for (const message of script) peer.send(message);
  });
  const call = createClient({ url: server.url, token: "t", reconnect: { maxAttempts: 0 } }).invoke({
    ...echo,
    method: "count",
    methodParameters: noParams,
  });
  const outcome = await call.finished.then(
    (success) => success,
    (error: unknown) => error,
  );
  return { outcome, close: await server.peers[0]!.closedWith };
}

describe("the client closes 1002 after a server violation it detected, 1000 after a normal end", () => {
  it.each<[string, string, readonly ServerMessage[]]>([
    ["an item on a channel no mapping announced", "invalid-channel", [u32Item(0, 9)]],
    ["an item that skips a sequence", "protocol-error", [u32Item(3)]],
    ["an item off its element schema", "validation-error", [{ ...u32Item(0), value: { kind: "string", value: "x" } }]],
    ["a finish before the stream's terminal", "protocol-error", [{ type: "invocationFinished", outcome: { kind: "success" } }]],
  ])("%s: server-violation %s, close 1002", async (_, code, script) => {
    const { outcome, close } = await closeAfter(script);
    expect(outcome).toMatchObject({ kind: "server-violation", code });
    expect(close.code).toBe(1002);
  });

  it("a normal end: close 1000", async () => {
    const { outcome, close } = await closeAfter([okEnd(0), { type: "invocationFinished", outcome: { kind: "success" } }]);
    expect(outcome).toEqual({ kind: "success" });
    expect(close.code).toBe(1000);
  });
});
