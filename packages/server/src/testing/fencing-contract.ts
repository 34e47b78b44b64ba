/**
 * Fencing (store/ownership.ts) as a test suite any `ClusterSessionStore`
 * can run: a claim moves a session to its next ownership epoch, and from
 * then on the store refuses every write of the former owner's epoch, alone
 * or grouped with other writes, on every stream of the session (those it
 * had before the claim and those created after) and on its journal, and
 * stores none of it; the claimer's writes, and unfenced input, go through. `open` returns two
 * node stores (A and B) on one fresh shared backend.
 *
 *   clusterFencingContract({ describe, it, expect }, "my cluster", () => openTwoNodes());
 */
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { OutputEvent } from "../store/session-store.js";
import type { TestApi } from "./store-contract.js";
import { bytes, session, startAttempt, stream } from "./store-records.js";

export type OpenNodePair = () => Promise<readonly [ClusterSessionStore, ClusterSessionStore]>;

const outcomeOf = (settled: PromiseSettledResult<unknown>): unknown =>
  settled.status === "fulfilled" ? "ok" : ((settled.reason as { code?: unknown }).code ?? String(settled.reason));

export function clusterFencingContract(api: TestApi, name: string, open: OpenNodePair): void {
  const { describe, it, expect } = api;
  const item = (streamId: string, sequence: bigint, text: string): OutputEvent => ({
    event: "item",
    streamId,
    sequence,
    itemCount: 1n,
    data: bytes(text),
    mimeType: undefined,
  });
  const texts = (events: readonly OutputEvent[]) =>
    events.map((e) => (e.event === "item" ? new TextDecoder().decode(e.data) : `end ${e.outcome}`));

  describe(name, () => {
    it("a claim moves the session to the next epoch; the former owner's writes with its epoch are refused and store nothing; the claimer's go through", async () => {
      const [a, b] = await open();
      await a.heartbeat(60_000);
      await b.heartbeat(60_000);
      const s = session();
      const input = stream(s.sessionId, "input");
      const out = stream(s.sessionId, "output", { parent: { kind: "params" } });
      await a.createSession(s, [input, out], startAttempt(s));
      expect(await a.ownership(s.sessionId)).toEqual({ nodeId: a.nodeId, epoch: 1n });
      await a.appendOutput(item(out.streamId, 0n, "a0"), [], 1n);
      // A's lease ends (as a lapse would): B claims the session at epoch 2.
      await a.leave();
      expect(await b.claimOrphans()).toEqual([s.sessionId]);
      expect(await b.ownership(s.sessionId)).toEqual({ nodeId: b.nodeId, epoch: 2n });
      expect(await a.ownership(s.sessionId)).toEqual({ nodeId: b.nodeId, epoch: 2n });

      const stale = await Promise.allSettled([
        a.appendOutput(item(out.streamId, 1n, "a1"), [], 1n),
        a.appendOutput(item(out.streamId, 2n, "a2"), [], 1n),
        a.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("i"), mimeType: undefined }, [], 1n),
        a.endInput(input.streamId, { kind: "cancelled", reason: "consumer-drop", by: "server" }, 1n),
      ]);
      expect(stale.map(outcomeOf)).toEqual(["ownership-lost", "ownership-lost", "ownership-lost", "ownership-lost"]);
      await expect(
        a.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 1n, outcome: '{"kind":"ok"}' }, [], 1n),
      ).rejects.toMatchObject({ code: "ownership-lost" });
      await expect(a.setResult(s.sessionId, '{"kind":"none"}', [], 1n)).rejects.toMatchObject({ code: "ownership-lost" });
      await expect(a.finish(s.sessionId, '{"kind":"success"}', 2000, 1n)).rejects.toMatchObject({ code: "ownership-lost" });
      expect(texts(await b.readOutput(out.streamId, 0n, 10))).toEqual(["a0"]);
      expect((await b.listStreams(s.sessionId)).map((x) => [x.count, x.inputTerminal, x.outputTerminal])).toEqual([
        [0n, undefined, false],
        [1n, undefined, false],
      ]);
      expect(await b.getSession(s.sessionId)).toMatchObject({ state: "running", result: undefined, outcome: undefined });

      // Input a node commits for the client's attachment carries no epoch: not fenced.
      await a.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("i"), mimeType: undefined }, []);
      // The claimer's writes, on streams from before the claim and on one created after it.
      const child = stream(s.sessionId, "output", { parent: { kind: "item", streamId: out.streamId, sequence: 1n } });
      await b.appendOutput(item(out.streamId, 1n, "b1"), [child], 2n);
      await expect(a.appendOutput(item(child.streamId, 0n, "a-child"), [], 1n)).rejects.toMatchObject({ code: "ownership-lost" });
      await b.appendOutput(item(child.streamId, 0n, "b-child"), [], 2n);
      await b.endInput(input.streamId, { kind: "cancelled", reason: "invocation-failed", by: "server" }, 2n);
      await b.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 2n, outcome: '{"kind":"failed"}' }, [], 2n);
      await b.finish(s.sessionId, '{"kind":"failure"}', 3000, 2n);
      expect(texts(await b.readOutput(out.streamId, 0n, 10))).toEqual(["a0", "b1", 'end {"kind":"failed"}']);
      expect(texts(await b.readOutput(child.streamId, 0n, 10))).toEqual(["b-child"]);
      expect(await b.getSession(s.sessionId)).toMatchObject({ state: "finished", outcome: '{"kind":"failure"}' });
      await a.close();
      await b.close();
    });

    it("journal entries and run counts carry the owner's epoch: the former owner's are refused and store nothing; the claimer's go through", async () => {
      const [a, b] = await open();
      // A store without the journal runs every method as not replayable: nothing to fence.
      if (
        a.appendJournal === undefined ||
        a.recordRun === undefined ||
        b.appendJournal === undefined ||
        b.recordRun === undefined ||
        b.readJournal === undefined
      ) {
        expect([a.appendJournal, b.appendJournal]).toEqual([undefined, undefined]);
        await a.close();
        await b.close();
        return;
      }
      await a.heartbeat(60_000);
      await b.heartbeat(60_000);
      const s = session();
      await a.createSession(s, [], startAttempt(s));
      const entry = (position: number, outcome: string) => ({ sessionId: s.sessionId, position, name: "step", outcome });
      await a.appendJournal(entry(0, '{"value":"a0"}'), 1n);
      await a.leave();
      expect(await b.claimOrphans()).toEqual([s.sessionId]);
      const stale = await Promise.allSettled([
        a.appendJournal(entry(1, '{"value":"a1"}'), 1n),
        a.recordRun(s.sessionId, 1n),
        ...(a.recordHandOver === undefined ? [] : [a.recordHandOver(s.sessionId, 1n)]),
      ]);
      expect(stale.map(outcomeOf)).toEqual([
        "ownership-lost",
        "ownership-lost",
        ...(a.recordHandOver === undefined ? [] : ["ownership-lost"]),
      ]);
      // Progress 0 finds nothing the first run committed: 1 in a row. (Had the stale hand-over
      // been stored, the re-run would count as one that found progress.)
      expect(await b.recordRun(s.sessionId, 2n, 0n)).toEqual({ run: 2, withoutProgress: 1 });
      await b.appendJournal(entry(1, '{"value":"b1"}'), 2n);
      expect((await b.readJournal(s.sessionId)).map((e) => e.outcome)).toEqual(['{"value":"a0"}', '{"value":"b1"}']);
      await a.close();
      await b.close();
    });

    it("reclaim (a restarted node's recovery) moves only the node's own running session to the next epoch: the former process's writes are refused, on every stream", async () => {
      const [a, b] = await open();
      await a.heartbeat(60_000);
      await b.heartbeat(60_000);
      const s = session();
      const input = stream(s.sessionId, "input");
      const out = stream(s.sessionId, "output", { parent: { kind: "params" } });
      await a.createSession(s, [input, out], startAttempt(s));
      await a.appendOutput(item(out.streamId, 0n, "a0"), [], 1n);
      // Another node's session, or a session that does not exist: nothing changes.
      expect(await b.reclaim(s.sessionId)).toBeUndefined();
      expect(await b.reclaim("no-such-session")).toBeUndefined();
      expect(await a.ownership(s.sessionId)).toEqual({ nodeId: a.nodeId, epoch: 1n });
      // The node's own: the next epoch, its streams with it. Writes of the epoch before (a former
      // process of the same node id) are refused and store nothing; the new epoch's go through.
      expect(await a.reclaim(s.sessionId)).toBe(2n);
      expect(await a.ownership(s.sessionId)).toEqual({ nodeId: a.nodeId, epoch: 2n });
      const stale = await Promise.allSettled([
        a.appendOutput(item(out.streamId, 1n, "former"), [], 1n),
        a.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("i"), mimeType: undefined }, [], 1n),
        a.finish(s.sessionId, '{"kind":"failure"}', 2000, 1n),
      ]);
      expect(stale.map(outcomeOf)).toEqual(["ownership-lost", "ownership-lost", "ownership-lost"]);
      await a.appendOutput(item(out.streamId, 1n, "a1"), [], 2n);
      expect(texts(await a.readOutput(out.streamId, 0n, 10))).toEqual(["a0", "a1"]);
      // A finished session is nobody's to reclaim.
      await a.finish(s.sessionId, '{"kind":"success"}', 3000, 2n);
      expect(await a.reclaim(s.sessionId)).toBeUndefined();
      expect(await a.ownership(s.sessionId)).toEqual({ nodeId: a.nodeId, epoch: 2n });
      await a.close();
      await b.close();
    });

    it("a claim back by the first node moves the epoch on again: its writes of its first epoch stay refused", async () => {
      const [a, b] = await open();
      await a.heartbeat(60_000);
      await b.heartbeat(60_000);
      const s = session();
      const out = stream(s.sessionId, "output", { parent: { kind: "params" } });
      await a.createSession(s, [out], startAttempt(s));
      await a.leave();
      expect(await b.claimOrphans()).toEqual([s.sessionId]);
      await b.leave();
      await a.heartbeat(60_000);
      expect(await a.claimOrphans()).toEqual([s.sessionId]);
      expect(await a.ownership(s.sessionId)).toEqual({ nodeId: a.nodeId, epoch: 3n });
      const writes = await Promise.allSettled([
        a.appendOutput(item(out.streamId, 0n, "first"), [], 1n),
        b.appendOutput(item(out.streamId, 0n, "second"), [], 2n),
        a.appendOutput(item(out.streamId, 0n, "third"), [], 3n),
      ]);
      expect(writes.map(outcomeOf)).toEqual(["ownership-lost", "ownership-lost", "ok"]);
      expect(texts(await a.readOutput(out.streamId, 0n, 10))).toEqual(["third"]);
      await a.close();
      await b.close();
    });
  });
}
