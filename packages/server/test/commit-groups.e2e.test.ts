/**
 * What a small invocation costs in syncs: each group commit of the SQLite store is one sync
 * before anything it holds is acknowledged, so the groups an invocation needs set the least
 * time it can take. A `tally` whose items and input end arrive together needs three: the
 * session, the input (its items and its end, handed to the store in order without waiting in
 * between), and the result with the success (`finishWithResult`: nothing is left to write after
 * it). A result that introduces a stream is written before its stream's items, so the finish
 * stays a write of its own.
 */
import { afterEach, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keyring } from "@golem-stream/tokens";
import { SqliteSessionStore, createSessionServer, type SessionServer } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { RawClient, TOKEN, demoStart, v } from "./helpers.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server on a SQLite store whose group commits are listed, each as the number of writes it held. */
async function serverCountingGroups(): Promise<{ url: string; groups: number[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-groups-"));
  const store = new SqliteSessionStore({ dataDir, synchronous: "normal" });
  const groups: number[] = [];
  // No `metrics` below: the server leaves the store's one commit listener to this test.
  store.observeCommits((_seconds, writes) => groups.push(writes));
  const sessions: SessionServer = createSessionServer({
    store,
    host: createDemoHost(),
    keyring: Keyring.generate(),
    authenticator: (token) => (token === TOKEN ? { account: "a", principal: "p" } : undefined),
  });
  const http: Server = createServer();
  sessions.attach(http);
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    await sessions.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { url: `ws://127.0.0.1:${(http.address() as { port: number }).port}`, groups };
}

it.each([1, 3])("a tally of %i item(s) sent with its end commits three groups: session, input, result and finish", async (items) => {
  const { url, groups } = await serverCountingGroups();
  const client = await RawClient.connect(url);
  client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
  const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
  const committedBefore = groups.length;
  // The items and the end in one socket write, as a client sends a short input: the server reads them in one turn.
  const tcp = (client.socket as unknown as { _socket: Socket })._socket;
  tcp.cork();
  for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
  client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items) });
  tcp.uncork();
  const { messages, closed } = await client.all();
  expect(closed.code).toBe(1000);
  expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  const acks = messages.filter((m) => m.type === "inputStreamAck");
  expect(acks.at(-1)).toMatchObject({ highestContiguousSequence: BigInt(items), terminal: true });
  expect(committedBefore).toBe(1); // the session
  // The input's items and its end in one group (the items join one write), then the result and the success in one write.
  expect(groups.slice(committedBefore)).toEqual([2, 1]);
});

it("a result that introduces a stream is recorded before the stream's items, and the finish after their terminal", async () => {
  const { url, groups } = await serverCountingGroups();
  const client = await RawClient.connect(url);
  client.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
  const { messages, closed } = await client.all();
  expect(closed.code).toBe(1000);
  const types = messages.map((m) => m.type);
  expect(types.indexOf("invocationResult")).toBeLessThan(types.indexOf("outputStreamEnd"));
  expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  // The session, the result, the output (its items and terminal in one group or more), the finish alone.
  expect(groups.length).toBeGreaterThanOrEqual(4);
  expect(groups.at(-1)).toBe(1);
});
