/**
 * A claim of orphaned sessions whose COMMIT answer is lost, on a real PostgreSQL: a proxy passes
 * the claim's COMMIT to the server and cuts the connection before the answer comes back, so the
 * claim committed and the claimer does not know it. The claimer's next claim returns those
 * sessions (nothing else would run them: no claim takes what its node owns); cut before the
 * COMMIT went out, the claim took nothing and the next one takes them as usual. A session a
 * second process with the same node id claimed after the lost claim is not returned: the claim's
 * commit marker, not the session's owner and epoch, says whose claim it was.
 */
import { afterAll, describe, expect, it } from "vitest";
import { session, startAttempt } from "@golem-stream/server/testing";
import type { PostgresSessionStore } from "../src/index.js";
import { cleanUp, connect, pgUrl, withAdmin } from "./support/stores.js";
import { cuttingProxy, type CuttingProxy } from "./support/cutting-proxy.js";

afterAll(cleanUp);

interface Orphaned {
  readonly proxy: CuttingProxy;
  /** The claimer, node-b, connected through the proxy. */
  readonly claimer: PostgresSessionStore;
  readonly sessionId: string;
  readonly schema: string;
}

/** node-a creates a running session and leaves; node-b, behind the proxy, is live. */
async function orphaned(): Promise<Orphaned> {
  const proxy = await cuttingProxy(pgUrl());
  const owner = await connect({ nodeId: "node-a" });
  const claimer = await connect({ schema: owner.schema, nodeId: "node-b", connectionString: proxy.url });
  await owner.heartbeat(60_000);
  await claimer.heartbeat(60_000);
  const s = session();
  await owner.createSession(s, [], startAttempt(s));
  await owner.leave();
  return { proxy, claimer, sessionId: s.sessionId, schema: owner.schema };
}

/** A claim round of `claimer` whose connection the proxy cuts at `marker` (`pass`: after passing it on): it fails. */
async function claimCut(proxy: CuttingProxy, claimer: PostgresSessionStore, marker: string, pass: boolean): Promise<void> {
  const cut = proxy.arm(marker, pass);
  await expect(claimer.claimOrphans()).rejects.toThrow();
  await cut;
}

function markers(schema: string): Promise<number> {
  return withAdmin(async (db) => {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.writer_groups`);
    return Number(rows[0]?.n);
  });
}

describe("a claim whose COMMIT answer is lost", () => {
  it("after the COMMIT reached the server: the next claim returns the sessions it took, once", async () => {
    const { proxy, claimer, sessionId, schema } = await orphaned();
    try {
      const markersBefore = await markers(schema);
      await claimCut(proxy, claimer, "COMMIT", true);
      // The claim committed: node-b owns the session at its next epoch, and no claim would take it.
      expect(await claimer.ownership(sessionId)).toEqual({ nodeId: "node-b", epoch: 2n });
      expect(await claimer.claimOrphans()).toEqual([sessionId]);
      expect(await claimer.claimOrphans()).toEqual([]);
      expect(await claimer.ownership(sessionId)).toEqual({ nodeId: "node-b", epoch: 2n });
      // The claim's marker is gone once it answered.
      expect(await markers(schema)).toBe(markersBefore);
    } finally {
      await proxy.close();
    }
  });

  it("a round that fails after finding the lost claim committed leaves its sessions to the next round", async () => {
    const { proxy, claimer, sessionId } = await orphaned();
    try {
      await claimCut(proxy, claimer, "COMMIT", true);
      // The next round asks about the lost claim (it committed), then its own claim is cut.
      await claimCut(proxy, claimer, "claimable AS", false);
      expect(await claimer.claimOrphans()).toEqual([sessionId]);
      expect(await claimer.claimOrphans()).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it("before the COMMIT went out: nothing was taken, and the next claim takes the session as usual", async () => {
    const { proxy, claimer, sessionId } = await orphaned();
    try {
      await claimCut(proxy, claimer, "COMMIT", false);
      expect(await claimer.ownership(sessionId)).toEqual({ nodeId: "node-a", epoch: 1n });
      expect(await claimer.claimOrphans()).toEqual([sessionId]);
      expect(await claimer.ownership(sessionId)).toEqual({ nodeId: "node-b", epoch: 2n });
      expect(await claimer.claimOrphans()).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it("a claim that did not commit does not return what a second process with its node id claimed at the same epoch", async () => {
    const { proxy, claimer, sessionId, schema } = await orphaned();
    try {
      await claimCut(proxy, claimer, "COMMIT", false);
      const twin = await connect({ schema, nodeId: "node-b" });
      expect(await twin.claimOrphans()).toEqual([sessionId]);
      // Owned by node-b at the epoch the lost claim would have given it: the twin's run, not this one's.
      expect(await claimer.ownership(sessionId)).toEqual({ nodeId: "node-b", epoch: 2n });
      expect(await claimer.claimOrphans()).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it("a committed claim whose session was claimed away meanwhile does not return it", async () => {
    const { proxy, claimer, sessionId, schema } = await orphaned();
    try {
      await claimCut(proxy, claimer, "COMMIT", true);
      // node-b's lease lapses (it leaves) and node-c claims what node-b owned.
      await claimer.leave();
      const other = await connect({ schema, nodeId: "node-c" });
      await other.heartbeat(60_000);
      expect(await other.claimOrphans()).toEqual([sessionId]);
      await claimer.heartbeat(60_000);
      expect(await claimer.claimOrphans()).toEqual([]);
      expect(await claimer.ownership(sessionId)).toEqual({ nodeId: "node-c", epoch: 3n });
    } finally {
      await proxy.close();
    }
  });
});
