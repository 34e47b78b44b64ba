/**
 * `limits.maxStoredBytesPerPrincipal` over PostgreSQL: the store's sums are
 * the truth, so a node that starts after another wrote a principal's bytes
 * (a restart, or another node of the cluster) refuses that principal at its
 * bound while another principal works. The bytes are written as a burst of
 * one-byte chunks, which the store packs into shared rows: the sums count
 * the bytes, not the rows, beside the session's own record and attempts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { startEmbeddedServer, type EmbeddedServer } from "@golem-stream/server";
import { ATTEMPT_RECORD_BYTES, SESSION_RECORD_BYTES } from "@golem-stream/server/store";
import { RawClient, TEST_TOKEN, demoStart, v } from "@golem-stream/server/testing";
import { cleanUp, connect, freshSchema } from "./support/stores.js";

afterAll(cleanUp);

const OTHER_TOKEN = "other-token";
/** One-byte chunks the first node stores. */
const CHUNKS = 100;

it("a node counts what the cluster stored before it started: the principal at its bound is refused, another is not", async () => {
  const schema = freshSchema();
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-pg-bytes-"));
  // One principal secret for both nodes, as a cluster has: a token is the same principal on each.
  const principalSecret = randomBytes(32);
  const node = async (nodeId: string, maxStoredBytesPerPrincipal?: number): Promise<EmbeddedServer> =>
    startEmbeddedServer({
      dataDir: join(dataDir, nodeId),
      tokens: [TEST_TOKEN, OTHER_TOKEN],
      principalSecret,
      store: await connect({ schema, nodeId }),
      cluster: { leaseTtlMs: 2000 },
      limits: maxStoredBytesPerPrincipal === undefined ? {} : { maxStoredBytesPerPrincipal },
    });
  const first = await node("bytes-a");
  let second: EmbeddedServer | undefined;
  try {
    const client = await RawClient.connect(first.url, TEST_TOKEN);
    client.send(demoStart("digest", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    for (let sequence = 0n; sequence < BigInt(CHUNKS); sequence++)
      client.send({ type: "input-u8", channel, sequence, payload: new Uint8Array([7]) });
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(CHUNKS) });
    expect((await client.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });

    // What the cluster keeps for the principal, by the store's sum: the chunks' bytes and the
    // session's record; the second node's bound is exactly that.
    const reader = await connect({ schema, nodeId: "bytes-reader" });
    const [kept] = await reader.storedBytesByPrincipal();
    await reader.close();
    expect(kept!.bytes).toBeGreaterThan(CHUNKS + SESSION_RECORD_BYTES + ATTEMPT_RECORD_BYTES);
    second = await node("bytes-b", kept!.bytes);
    const refused = await RawClient.connect(second.url, TEST_TOKEN);
    refused.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect(await refused.next()).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
    const other = await RawClient.connect(second.url, OTHER_TOKEN);
    other.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
    expect((await other.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  } finally {
    await second?.close();
    await first.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
