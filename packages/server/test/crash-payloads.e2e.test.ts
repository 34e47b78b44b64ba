/**
 * A server killed with SIGKILL while input streams in loses no acknowledged
 * byte or item, and what its store holds afterwards is exactly a prefix of
 * what was sent: payload files and database rows agree after a real crash,
 * not only after a clean close. Both kinds of payload file are covered:
 * packed u8 batches, and bursts of small string items whose runs keep their
 * bytes in the file.
 */
import { afterEach, expect, it } from "vitest";
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { SqliteSessionStore } from "../src/index.js";
import { RawClient, TOKEN, demoStart, v } from "./helpers.js";

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function startServerProcess(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(fileURLToPath(new URL("./support/crash-server.mjs", import.meta.url)), [dataDir, TOKEN], { stdio: "inherit" });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`server process exited with ${code}`)));
    child.once("message", (message) => resolve({ url: (message as { url: string }).url, child }));
  });
}

/** A server process on a fresh data directory, and a `demo` invocation of `method` started on it over one input stream. */
async function startedUpload(method: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-crash-"));
  dirs.push(dataDir);
  const { url, child } = await startServerProcess(dataDir);
  const client = await RawClient.connect(url);
  client.send(demoStart(method, v.record(v.stream(randomUUID()))));
  const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
  return { dataDir, child, client, channel };
}

/** Kills the server with SIGKILL once `atLeast` input items are acknowledged; resolves with the highest acknowledged before the kill. */
async function killOnceAcked(client: RawClient, child: ChildProcess, atLeast: bigint): Promise<bigint> {
  const acked = () =>
    client.received.reduce(
      (high, m) => (m.type === "inputStreamAck" && m.highestContiguousSequence > high ? m.highestContiguousSequence : high),
      0n,
    );
  await client.waitFor(() => acked() >= atLeast);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
  const ackedBeforeKill = acked();
  client.terminate();
  return ackedBeforeKill;
}

/** The one running session's input stream, its count checked to hold every acknowledged item and nothing past what was sent. */
async function theInput(store: SqliteSessionStore, acked: bigint, sent: bigint) {
  const [session] = await store.listRunningSessions();
  const [input] = await store.listStreams(session!.sessionId);
  expect(input!.count).toBeGreaterThanOrEqual(acked);
  expect(input!.count).toBeLessThanOrEqual(sent);
  return { session: session!, input: input! };
}

it("SIGKILL during a u8 upload: every ACKed byte is stored, and the store holds a prefix of what was sent", async () => {
  const { dataDir, child, client, channel } = await startedUpload("digest");

  // 40 batches of 128 KiB (payload files), each byte a function of its position.
  const batch = 128 * 1024;
  const byteAt = (position: number) => (position * 31 + (position >> 17)) & 0xff;
  let sent = 0;
  for (let b = 0; b < 40; b++) {
    client.send({
      type: "input-u8",
      channel,
      sequence: BigInt(sent),
      payload: Uint8Array.from({ length: batch }, (_, i) => byteAt(sent + i)),
    });
    sent += batch;
  }
  // Kill once a third is acknowledged: later batches are in flight, in the kernel, or being synced.
  const ackedBeforeKill = await killOnceAcked(client, child, BigInt(Math.floor(sent / 3)));

  const store = new SqliteSessionStore({ dataDir });
  try {
    const { session, input } = await theInput(store, ackedBeforeKill, BigInt(sent));
    const chunks = await store.readInput(input.streamId, 0n, input.count);
    let position = 0;
    let mismatches = 0;
    for (const chunk of chunks) {
      expect(chunk.sequence).toBe(BigInt(position));
      for (const byte of chunk.data) if (byte !== byteAt(position++)) mismatches++;
    }
    expect(mismatches).toBe(0);
    expect(BigInt(position)).toBe(input.count);
    expect(readdirSync(join(dataDir, "payloads"))).toEqual([session.sessionId]);
  } finally {
    await store.close();
  }
});

it("SIGKILL during a burst of small string items: every ACKed item is stored, and the store holds a prefix of what was sent", async () => {
  const { dataDir, child, client, channel } = await startedUpload("tally");

  // 30 000 items of about 64 bytes, each naming its own sequence: runs of them reach the payload file.
  const items = 30_000;
  const textOf = (sequence: number) => `item ${sequence} `.padEnd(64, "x");
  for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(textOf(i)) });
  const ackedBeforeKill = await killOnceAcked(client, child, BigInt(items / 3));

  const store = new SqliteSessionStore({ dataDir });
  try {
    const { session, input } = await theInput(store, ackedBeforeKill, BigInt(items));
    const chunks = await store.readInput(input.streamId, 0n, input.count);
    const decoder = new TextDecoder();
    let next = 0;
    let wrong = 0;
    for (const chunk of chunks) {
      expect(chunk.sequence).toBe(BigInt(next));
      expect(chunk.itemCount).toBe(1n);
      if (!decoder.decode(chunk.data).includes(textOf(next))) wrong++;
      next++;
    }
    expect(wrong).toBe(0);
    expect(BigInt(next)).toBe(input.count);
    // The runs were kept in the session's payload file, the path this test is about.
    expect(readdirSync(join(dataDir, "payloads"))).toEqual([session.sessionId]);
  } finally {
    await store.close();
  }
});
