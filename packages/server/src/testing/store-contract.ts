/**
 * The `SessionStore` contract as a test suite any implementation can run:
 * atomic creation, generations, input and output logs, group-committed
 * writes that fail alone, byte-bounded replay, retention and tombstones. The caller hands
 * in its test framework's `describe`/`it`/`expect` (vitest's; only its
 * types are referenced, so the server has no runtime dependency on it) and
 * a factory for a fresh, open store; every case closes its store.
 *
 *   import { describe, expect, it } from "vitest";
 *   import { storeContract } from "@golem-stream/server/testing";
 *   storeContract({ describe, it, expect }, "MyStore", () => MyStore.open(...));
 *
 * Why one file: a store's implementer reads the whole contract as one list of cases in one
 * describe block; the cases share only the opened store and the record builders.
 */
import { randomUUID } from "node:crypto";
import type { describe as Describe, expect as Expect, it as It } from "vitest";
import type { InputChunk, NewStream, SessionStore } from "../store/session-store.js";
import { bytes, session, startAttempt, stream } from "./store-records.js";
import { ATTEMPT_RECORD_BYTES, sessionRecordBytes } from "../store/record-bytes.js";

export interface TestApi {
  readonly describe: typeof Describe;
  readonly it: typeof It;
  readonly expect: typeof Expect;
}

/** Registers the contract's cases in a `describe(name)` block; `open` returns a fresh store (its own database, or at least fresh ids). */
export function storeContract(api: TestApi, name: string, open: () => SessionStore | Promise<SessionStore>): void {
  const { describe, it, expect } = api;
  describe(name, () => {
    it("creates a session with its streams and start attempt atomically; idempotency keys are unique per agent", async () => {
      const store = await open();
      const first = session();
      const input = stream(first.sessionId, "input");
      const attempt = {
        attemptId: randomUUID(),
        operation: "start" as const,
        descriptorDigest: "d1",
        sessionId: first.sessionId,
        generation: 1n,
      };
      expect(await store.createSession(first, [input], attempt)).toEqual({ kind: "created" });
      expect(await store.getSession(first.sessionId)).toEqual(first);
      expect(await store.getAttempt(attempt.attemptId)).toEqual(attempt);
      const [saved] = await store.listStreams(first.sessionId);
      expect(saved).toMatchObject({ streamId: input.streamId, ordinal: 0, count: 0n, inputTerminal: undefined, outputTerminal: false });

      expect(await store.createSession(session(), [], attempt)).toEqual({ kind: "attempt-exists" });
      const again = session();
      expect(await store.createSession(again, [], { ...attempt, attemptId: randomUUID(), sessionId: again.sessionId })).toEqual({
        kind: "idempotency-conflict",
      });
      const otherAgent = session({ agentIdentity: "cd".repeat(32) });
      expect(await store.createSession(otherAgent, [], { ...attempt, attemptId: randomUUID(), sessionId: otherAgent.sessionId })).toEqual({
        kind: "created",
      });
      await store.close();
    });

    it("moves generations only forward and only from the expected one", async () => {
      const store = await open();
      const s = session();
      await store.createSession(s, [], startAttempt(s));
      const resume = {
        attemptId: randomUUID(),
        operation: "resume" as const,
        descriptorDigest: "r",
        sessionId: s.sessionId,
        generation: 2n,
      };
      expect(await store.attach(resume, "gai1_two", 1n)).toEqual({ kind: "attached", generation: 2n });
      expect(await store.attach(resume, "gai1_two", 1n)).toEqual({ kind: "attempt-exists" });
      const stale = { ...resume, attemptId: randomUUID(), generation: 2n };
      expect(await store.attach(stale, "gai1_x", 1n)).toEqual({ kind: "superseded" });
      const takeover = { ...resume, attemptId: randomUUID(), operation: "takeover" as const, generation: 3n };
      expect(await store.attach(takeover, "gai1_three", undefined)).toEqual({ kind: "attached", generation: 3n });
      expect((await store.getSession(s.sessionId))?.sessionToken).toBe("gai1_three");
      await store.close();
    });

    it("acceptInputWatched, where a store has it, commits as acceptInput does and tells each chunk's outcome once, in order, after returning", async () => {
      const store = await open();
      if (store.acceptInputWatched === undefined) {
        // Optional: the session then hands every chunk to acceptInput.
        expect(typeof store.acceptInput).toBe("function");
        await store.close();
        return;
      }
      const { input, chunk } = await withInputStream(store);
      const told: string[] = [];
      await new Promise<void>((resolve) => {
        const watcher = (name: string) => ({
          inputSettled: (error: Error | undefined) => {
            told.push(`${name} ${error === undefined ? "ok" : "failed"}`);
            if (told.length === 4) resolve();
          },
        });
        store.acceptInputWatched?.(chunk(0n, "ab"), undefined, watcher("first"));
        store.acceptInputWatched?.(chunk(2n, "c"), undefined, watcher("second"));
        store.acceptInputWatched?.(chunk(9n, "z"), undefined, watcher("gap"));
        store.acceptInputWatched?.(chunk(3n, "de"), undefined, watcher("third"));
        expect(told).toEqual([]);
      });
      expect(told).toEqual(["first ok", "second ok", "gap failed", "third ok"]);
      const stored = await store.readInput(input.streamId, 0n, 5n);
      expect(stored.map((c) => [c.sequence, Buffer.from(c.data).toString()])).toEqual([
        [0n, "ab"],
        [2n, "c"],
        [3n, "de"],
      ]);
      await store.close();
    });

    it("joinInputWatched, where a store has it: a joined chunk commits with the write it joined and is told with it; a refused one changes nothing", async () => {
      const store = await open();
      if (store.joinInputWatched === undefined) {
        // Optional: the session then hands every chunk over on its own.
        expect(store.joinInputWatched).toBeUndefined();
        await store.close();
        return;
      }
      // A chunk joins a write handed over by acceptInputWatched: a store with one has both.
      if (store.acceptInputWatched === undefined) throw new Error("a store with joinInputWatched has acceptInputWatched too");
      const { input, chunk } = await withInputStream(store);
      const told: string[] = [];
      const settled: Promise<void>[] = [];
      const watcher = (name: string) => {
        let resolve = (): void => undefined;
        settled.push(new Promise<void>((r) => (resolve = r)));
        return {
          inputSettled: (error: Error | undefined) => {
            told.push(`${name} ${error === undefined ? "ok" : "failed"}`);
            resolve();
          },
        };
      };
      const first = watcher("first");
      store.acceptInputWatched(chunk(0n, "ab"), undefined, first);
      expect(store.joinInputWatched(chunk(2n, "c"), undefined, watcher("unknown"))).toBe(false); // a watcher with no write
      expect(store.joinInputWatched(chunk(9n, "z"), undefined, first)).toBe(false); // does not continue the write
      // A store may refuse any join: the chunk is then handed over on its own, as the session does.
      if (!store.joinInputWatched(chunk(2n, "c"), undefined, first)) store.acceptInputWatched(chunk(2n, "c"), undefined, watcher("second"));
      expect(told).toEqual([]);
      await Promise.all([settled[0], ...settled.slice(2)]);
      expect(told.every((entry) => entry.endsWith(" ok"))).toBe(true);
      expect(told.filter((entry) => entry.startsWith("first"))).toHaveLength(1); // told once, joined or not
      expect((await store.getStream(input.streamId))?.count).toBe(3n);
      const stored = await store.readInput(input.streamId, 0n, 3n);
      expect(stored.map((c) => [c.sequence, Buffer.from(c.data).toString()])).toEqual([
        [0n, "ab"],
        [2n, "c"],
      ]);
      await store.close();
    });

    it("finishWithResult, where a store has it: the result and the outcome in one write; a result already recorded refuses both", async () => {
      const store = await open();
      if (store.finishWithResult === undefined) {
        // Optional: the session then calls setResult, then finish.
        expect(typeof store.finish).toBe("function");
        await store.close();
        return;
      }
      const s = session();
      await store.createSession(s, [], startAttempt(s));
      await store.finishWithResult(s.sessionId, '{"kind":"none"}', '{"kind":"success"}', 4000);
      expect(await store.getSession(s.sessionId)).toMatchObject({
        result: '{"kind":"none"}',
        state: "finished",
        outcome: '{"kind":"success"}',
        finishedAt: 4000,
      });
      const other = session({ idempotencyKey: "key-2" });
      await store.createSession(other, [], startAttempt(other));
      await store.setResult(other.sessionId, '{"kind":"none"}', []);
      await expect(store.finishWithResult(other.sessionId, '{"kind":"none"}', '{"kind":"success"}', 5000)).rejects.toThrow();
      // Neither part of the refused write was recorded: the session still runs.
      expect(await store.getSession(other.sessionId)).toMatchObject({ state: "running", outcome: undefined });
      await store.close();
    });

    it("input chunks must continue the stream; ranges are read back across chunk boundaries", async () => {
      const store = await open();
      const s = session();
      const input = stream(s.sessionId, "input");
      await store.createSession(s, [input], startAttempt(s));
      await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 3n, data: bytes("abc"), mimeType: undefined }, []);
      await store.acceptInput({ streamId: input.streamId, sequence: 3n, itemCount: 2n, data: bytes("de"), mimeType: undefined }, []);
      await expect(
        store.acceptInput({ streamId: input.streamId, sequence: 9n, itemCount: 1n, data: bytes("z"), mimeType: undefined }, []),
      ).rejects.toThrow();
      const overlap = await store.readInput(input.streamId, 2n, 4n);
      expect(overlap.map((c) => c.sequence)).toEqual([0n, 3n]);
      // A range that starts where a chunk ends, or ends where one starts, leaves that chunk out.
      expect((await store.readInput(input.streamId, 3n, 5n)).map((c) => c.sequence)).toEqual([3n]);
      expect((await store.readInput(input.streamId, 0n, 3n)).map((c) => c.sequence)).toEqual([0n]);
      expect((await store.readInput(input.streamId, 4n, 5n)).map((c) => c.sequence)).toEqual([3n]);
      expect(await store.readInput(input.streamId, 5n, 9n)).toEqual([]);
      await store.endInput(input.streamId, { kind: "cancelled", reason: "source-unavailable", by: "client" });
      const [saved] = await store.listStreams(s.sessionId);
      expect(saved).toMatchObject({ count: 5n, inputTerminal: { kind: "cancelled", reason: "source-unavailable", by: "client" } });
      await store.close();
    });

    it("endInput with a count records a natural end only where the input holds that many items: elsewhere it is refused and records nothing; once ended, another end changes nothing", async () => {
      const store = await open();
      const s = session();
      const input = stream(s.sessionId, "input");
      await store.createSession(s, [input], startAttempt(s));
      await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 2n, data: bytes("ab"), mimeType: undefined }, []);
      // Issued together with the chunk before it: the end behind a refused chunk is refused too.
      const [refusedChunk, endPastIt] = await Promise.allSettled([
        store.acceptInput({ streamId: input.streamId, sequence: 3n, itemCount: 1n, data: bytes("d"), mimeType: undefined }, []),
        store.endInput(input.streamId, { kind: "end" }, undefined, 4n),
      ]);
      expect([refusedChunk.status, endPastIt.status]).toEqual(["rejected", "rejected"]);
      await expect(store.endInput(input.streamId, { kind: "end" }, undefined, 1n)).rejects.toThrow();
      expect((await store.listStreams(s.sessionId))[0]).toMatchObject({ count: 2n, inputTerminal: undefined });
      await store.endInput(input.streamId, { kind: "end" }, undefined, 2n);
      expect((await store.listStreams(s.sessionId))[0]).toMatchObject({ count: 2n, inputTerminal: { kind: "end" } });
      // Ended: an end again (the client's resend) or a cancel is done, whatever its count.
      await store.endInput(input.streamId, { kind: "end" }, undefined, 5n);
      await store.endInput(input.streamId, { kind: "cancelled", reason: "invocation-failed", by: "server" });
      expect((await store.listStreams(s.sessionId))[0]).toMatchObject({ count: 2n, inputTerminal: { kind: "end" } });
      await store.close();
    });

    it("fencing: a session stays at ownership epoch 1 unless a cluster claims it; a write with another epoch is refused as ownership-lost and stores nothing, with epoch 1 or none it goes through", async () => {
      const store = await open();
      const s = session();
      const input = stream(s.sessionId, "input");
      await store.createSession(s, [input], startAttempt(s));
      const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
      const lost = { code: "ownership-lost" };
      await expect(store.setResult(s.sessionId, '{"kind":"none"}', [out], 2n)).rejects.toMatchObject(lost);
      await store.setResult(s.sessionId, '{"kind":"none"}', [out], 1n);
      const item = (sequence: bigint, text: string) => ({
        event: "item" as const,
        streamId: out.streamId,
        sequence,
        itemCount: 1n,
        data: bytes(text),
        mimeType: undefined,
      });
      const chunk = { streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined };
      // Issued together (one group where the store groups writes): the stale ones fail alone.
      const writes = await Promise.allSettled([
        store.appendOutput(item(0n, "x"), [], 2n),
        store.acceptInput(chunk, [], 2n),
        store.appendOutput(item(0n, "y"), [], 1n),
        store.acceptInput(chunk, []),
        store.endInput(input.streamId, { kind: "end" }, 2n),
        store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 1n, outcome: '{"kind":"ok"}' }, [], 2n),
      ]);
      expect(writes.map((w) => (w.status === "fulfilled" ? "ok" : (w.reason as { code?: unknown }).code))).toEqual([
        "ownership-lost",
        "ownership-lost",
        "ok",
        "ok",
        "ownership-lost",
        "ownership-lost",
      ]);
      await expect(store.finish(s.sessionId, '{"kind":"success"}', 2000, 2n)).rejects.toMatchObject(lost);
      expect(
        (await store.readOutput(out.streamId, 0n, 10)).map((e) => (e.event === "item" ? new TextDecoder().decode(e.data) : "end")),
      ).toEqual(["y"]);
      const streams = await store.listStreams(s.sessionId);
      expect(streams.map((x) => [x.count, x.inputTerminal, x.outputTerminal])).toEqual([
        [1n, undefined, false],
        [1n, undefined, false],
      ]);
      expect(await store.getSession(s.sessionId)).toMatchObject({ state: "running", result: '{"kind":"none"}' });
      await store.finish(s.sessionId, '{"kind":"success"}', 2000, 1n);
      expect(await store.getSession(s.sessionId)).toMatchObject({ state: "finished" });
      await store.close();
    });

    it("interleaved bursts of two streams issued together: each write succeeds or fails on its own, order within a stream kept", async () => {
      const store = await open();
      const s = session();
      const input = stream(s.sessionId, "input");
      await store.createSession(s, [input], startAttempt(s));
      const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
      await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
      const chunk = (sequence: bigint, text: string) =>
        store.acceptInput(
          { streamId: input.streamId, sequence, itemCount: BigInt(text.length), data: bytes(text), mimeType: undefined },
          [],
        );
      const item = (sequence: bigint, text: string) =>
        store.appendOutput({ event: "item", streamId: out.streamId, sequence, itemCount: 1n, data: bytes(text), mimeType: undefined }, []);
      const writes = [
        chunk(0n, "ab"),
        item(0n, "x"),
        chunk(2n, "c"),
        item(1n, "y"),
        chunk(9n, "gap"), // does not continue the input: fails alone
        item(1n, "again"), // repeats a sequence: fails alone
        chunk(3n, "d"),
        item(2n, "z"),
      ];
      expect((await Promise.allSettled(writes)).map((r) => r.status)).toEqual([
        "fulfilled",
        "fulfilled",
        "fulfilled",
        "fulfilled",
        "rejected",
        "rejected",
        "fulfilled",
        "fulfilled",
      ]);
      const text = (data: Uint8Array) => new TextDecoder().decode(data);
      expect((await store.readInput(input.streamId, 0n, 10n)).map((c) => text(c.data))).toEqual(["ab", "c", "d"]);
      const events = await store.readOutput(out.streamId, 0n, 10);
      expect(events.map((e) => (e.event === "item" ? text(e.data) : e.event))).toEqual(["x", "y", "z"]);
      expect((await store.listStreams(s.sessionId)).map((x) => x.count)).toEqual([4n, 3n]);
      await store.close();
    });

    it("output events replay from any sequence; the terminal comes last; nested streams are recorded with their parent", async () => {
      const store = await open();
      const s = session();
      await store.createSession(s, [], startAttempt(s));
      const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
      await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
      await expect(store.setResult(s.sessionId, '{"kind":"none"}', [])).rejects.toThrow();
      const child = stream(s.sessionId, "output", { parent: { kind: "item", streamId: out.streamId, sequence: 1n } });
      await store.appendOutput(
        { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 2n, data: bytes("ab"), mimeType: undefined },
        [],
      );
      await store.appendOutput(
        { event: "item", streamId: out.streamId, sequence: 2n, itemCount: 1n, data: bytes("c"), mimeType: "text/plain" },
        [child],
      );
      await store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 3n, outcome: '{"kind":"ok"}' }, []);
      await expect(
        store.appendOutput(
          { event: "item", streamId: out.streamId, sequence: 3n, itemCount: 1n, data: bytes("d"), mimeType: undefined },
          [],
        ),
      ).rejects.toThrow();
      expect((await store.readOutput(out.streamId, 0n, 10)).map((e) => [e.event, e.sequence])).toEqual([
        ["item", 0n],
        ["item", 2n],
        ["terminal", 3n],
      ]);
      expect((await store.readOutput(out.streamId, 1n, 10)).map((e) => e.sequence)).toEqual([2n, 3n]);
      expect(await store.readOutput(out.streamId, 4n, 10)).toEqual([]);
      await store.finish(s.sessionId, '{"kind":"success"}', 5000);
      // Retention: purging before the finish time keeps it, after removes session, streams and logs.
      expect(await store.purgeFinished(5000, 6000, 0)).toBe(0);
      expect(await store.purgeFinished(5001, 6000, 0)).toBe(1);
      expect(await store.getSession(s.sessionId)).toBeUndefined();
      expect(await store.readOutput(out.streamId, 0n, 10)).toEqual([]);
      await store.close();
    });

    it("a purge leaves tombstones of attempt ids and idempotency keys until they are dropped", async () => {
      const store = await open();
      const s = session();
      const start = startAttempt(s);
      await store.createSession(s, [], start);
      const resume = {
        attemptId: randomUUID(),
        operation: "resume" as const,
        descriptorDigest: "r",
        sessionId: s.sessionId,
        generation: 2n,
      };
      await store.attach(resume, "gai1_two", 1n);
      const running = session({ idempotencyKey: "key-2" });
      await store.createSession(running, [], { ...start, attemptId: randomUUID(), sessionId: running.sessionId });
      await store.finish(s.sessionId, '{"kind":"success"}', 1000);
      expect(await store.purgeFinished(1001, 2000, 0)).toBe(1);
      expect(await store.getAttempt(start.attemptId)).toBeUndefined();

      const again = session({ sessionId: randomUUID() });
      const newAttempt = (attemptId: string) => ({ ...start, attemptId, sessionId: again.sessionId });
      // The start's and the resume's attempt ids, and the idempotency key: purged.
      expect(await store.createSession(again, [], newAttempt(start.attemptId))).toEqual({ kind: "purged" });
      expect(await store.createSession(again, [], newAttempt(resume.attemptId))).toEqual({ kind: "purged" });
      expect(await store.createSession(again, [], newAttempt(randomUUID()))).toEqual({ kind: "purged" });
      // Another agent's key of the same text is not.
      const other = session({ sessionId: randomUUID(), agentIdentity: "ef".repeat(32) });
      expect(await store.createSession(other, [], { ...start, attemptId: randomUUID(), sessionId: other.sessionId })).toEqual({
        kind: "created",
      });
      // The running session was not purged and left no tombstone.
      expect(await store.getSession(running.sessionId)).toBeDefined();

      // Tombstones stamped before tombstonesBefore go; then the key is free again.
      expect(await store.purgeFinished(0, 3000, 1999)).toBe(0);
      expect(await store.createSession(again, [], newAttempt(randomUUID()))).toEqual({ kind: "purged" });
      expect(await store.purgeFinished(0, 3000, 2001)).toBe(0);
      expect(await store.createSession(again, [], newAttempt(start.attemptId))).toEqual({ kind: "created" });
      await store.close();
    });

    it("sums the bytes each principal keeps (its logs' payloads, its sessions' records and attempts), all or of the sessions finished before a time; a purge gives them back", async () => {
      const store = await open();
      if (store.storedBytesByPrincipal === undefined) {
        // Optional: a store without it leaves the server to count what it wrote since it started.
        expect(store.storedBytesByPrincipal).toBeUndefined();
        await store.close();
        return;
      }
      // Account acme's principals (another account's are looked at on their own below).
      const totals = async (finishedBefore?: number) =>
        (await store.storedBytesByPrincipal!(finishedBefore))
          .filter((t) => t.account === "acme")
          .map((t) => [t.account, t.principal, t.bytes])
          .sort((a, b) => String(a[1]).localeCompare(String(b[1])));
      expect(await totals()).toEqual([]);
      const alice = session();
      const input = stream(alice.sessionId, "input");
      await store.createSession(alice, [input], startAttempt(alice));
      const out = stream(alice.sessionId, "output", { parent: { kind: "result" }, elementKind: "binary" });
      await store.setResult(alice.sessionId, '{"kind":"none"}', [out]);
      await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 3n, data: bytes("abc"), mimeType: undefined }, []);
      // Large enough for a store that keeps big payloads apart from its rows (the SQLite store's payload files).
      const large = new Uint8Array(100_000).fill(7);
      await store.appendOutput(
        { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: large, mimeType: undefined },
        [],
      );
      await store.appendOutput(
        { event: "item", streamId: out.streamId, sequence: 1n, itemCount: 1n, data: bytes("de"), mimeType: "text/plain" },
        [],
      );
      await store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 2n, outcome: '{"kind":"ok"}' }, []);
      const bob = session({ principal: "bob", idempotencyKey: "key-bob" });
      const bobInput = stream(bob.sessionId, "input");
      await store.createSession(bob, [bobInput], startAttempt(bob));
      await store.acceptInput({ streamId: bobInput.streamId, sequence: 0n, itemCount: 4n, data: bytes("wxyz"), mimeType: undefined }, []);
      // A principal of the same name in another account is another principal.
      const other = session({ account: "globex", idempotencyKey: "key-globex", parameters: '{"kind":"string","value":"é"}' });
      await store.createSession(other, [], startAttempt(other));
      // Each session's record (its texts in UTF-8 bytes, the result once set) and each attempt.
      const aliceBytes = sessionRecordBytes({ ...alice, result: '{"kind":"none"}' }) + ATTEMPT_RECORD_BYTES + 3 + 100_000 + 2;
      let bobBytes = sessionRecordBytes(bob) + ATTEMPT_RECORD_BYTES + 4;
      const otherBytes = sessionRecordBytes(other) + ATTEMPT_RECORD_BYTES;
      expect(otherBytes).toBe(
        sessionRecordBytes({ ...other, parameters: "" }) + '{"kind":"string","value":"é"}'.length + 1 + ATTEMPT_RECORD_BYTES,
      );
      const byPrincipal = async () => (await store.storedBytesByPrincipal!()).map((t) => [t.account, t.principal, t.bytes]);
      expect(await totals()).toEqual([
        ["acme", "alice", aliceBytes],
        ["acme", "bob", bobBytes],
      ]);
      expect((await byPrincipal()).find((t) => t[0] === "globex")).toEqual(["globex", "alice", otherBytes]);
      await store.attach(
        { attemptId: randomUUID(), operation: "takeover", descriptorDigest: "t", sessionId: bob.sessionId, generation: 2n },
        "gai1_b2",
        undefined,
      );
      bobBytes += ATTEMPT_RECORD_BYTES;
      expect(await totals(5000)).toEqual([]);
      await store.finish(alice.sessionId, '{"kind":"success"}', 1000);
      await store.finish(bob.sessionId, '{"kind":"success"}', 3000);
      // What purgeFinished(finishedBefore) is about to delete: Alice's session only.
      expect(await totals(1000)).toEqual([]);
      expect(await totals(1001)).toEqual([["acme", "alice", aliceBytes]]);
      expect(await store.purgeFinished(1001, 2000, 0)).toBe(1);
      expect(await totals()).toEqual([["acme", "bob", bobBytes]]);
      expect(await totals(1001)).toEqual([]);
      expect(await totals(3001)).toEqual([["acme", "bob", bobBytes]]);
      await store.close();
    });

    it("readOutput with maxBytes stops after the event that reaches it, and always returns at least one", async () => {
      const store = await open();
      const s = session();
      await store.createSession(s, [], startAttempt(s));
      const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
      await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
      const items = ["aaaa", "bbbb", "cc", "dddddddd"];
      for (const [i, text] of items.entries()) {
        await store.appendOutput(
          { event: "item", streamId: out.streamId, sequence: BigInt(i), itemCount: 1n, data: bytes(text), mimeType: undefined },
          [],
        );
      }
      await store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 4n, outcome: '{"kind":"ok"}' }, []);
      const read = async (from: bigint, limit: number, maxBytes?: number) =>
        (await store.readOutput(out.streamId, from, limit, maxBytes)).map((e) =>
          e.event === "item" ? new TextDecoder().decode(e.data) : e.event,
        );
      expect(await read(0n, 10, 8)).toEqual(["aaaa", "bbbb"]);
      expect(await read(0n, 10, 9)).toEqual(["aaaa", "bbbb", "cc"]);
      expect(await read(0n, 10, 1)).toEqual(["aaaa"]);
      expect(await read(3n, 10, 2)).toEqual(["dddddddd"]); // larger than the bound: alone
      expect(await read(2n, 10, 10)).toEqual(["cc", "dddddddd"]); // the terminal waits for the next read
      expect(await read(2n, 10, 11)).toEqual(["cc", "dddddddd", "terminal"]);
      expect(await read(0n, 2, 100)).toEqual(["aaaa", "bbbb"]); // the count still bounds
      expect(await read(0n, 10)).toEqual([...items, "terminal"]);
      await store.close();
    });
    it("journal: entries by position, durable before the call resolves; a position taken by another entry or a finished session is refused, the same entry again is done; runs count from 2, and the re-runs in a row without progress, which a drain's hand-over starts again; purged with the session", async () => {
      const store = await open();
      const { appendJournal, readJournal, recordRun } = store;
      expect(appendJournal !== undefined && readJournal !== undefined && recordRun !== undefined).toBe(true);
      if (appendJournal === undefined || readJournal === undefined || recordRun === undefined) return;
      const s = session();
      await store.createSession(s, [], startAttempt(s));
      const entry = (position: number, name: string, outcome: string) => ({ sessionId: s.sessionId, position, name, outcome });
      // Positions are taken in call order but may commit out of order: a later one first.
      await appendJournal.call(store, entry(1, "charge", '{"value":{"id":"c-1"}}'));
      await appendJournal.call(store, entry(0, "now", '{"value":1700000000000}'));
      await expect(appendJournal.call(store, entry(1, "charge", '{"value":{"id":"c-2"}}'))).rejects.toThrow();
      await expect(appendJournal.call(store, entry(1, "refund", '{"value":{"id":"c-1"}}'))).rejects.toThrow();
      // The same entry again: a write retried after its first commit's answer was lost. It is done, not refused.
      await appendJournal.call(store, entry(1, "charge", '{"value":{"id":"c-1"}}'));
      await appendJournal.call(store, entry(2, "fails", '{"error":"no such account"}'));
      expect(await readJournal.call(store, s.sessionId)).toEqual([
        entry(0, "now", '{"value":1700000000000}'),
        entry(1, "charge", '{"value":{"id":"c-1"}}'),
        entry(2, "fails", '{"error":"no such account"}'),
      ]);
      expect(await readJournal.call(store, randomUUID())).toEqual([]);
      await expect(appendJournal.call(store, { ...entry(0, "x", "{}"), sessionId: randomUUID() })).rejects.toThrow();
      // Without a progress, every re-run is one without progress.
      expect(await recordRun.call(store, s.sessionId)).toEqual({ run: 2, withoutProgress: 1 });
      expect(await recordRun.call(store, s.sessionId)).toEqual({ run: 3, withoutProgress: 2 });
      // A re-run that finds more than the one before starts the count again; the same, or less, adds one.
      expect(await recordRun.call(store, s.sessionId, undefined, 5n)).toEqual({ run: 4, withoutProgress: 0 });
      expect(await recordRun.call(store, s.sessionId, undefined, 5n)).toEqual({ run: 5, withoutProgress: 1 });
      expect(await recordRun.call(store, s.sessionId, undefined, 4n)).toEqual({ run: 6, withoutProgress: 2 });
      expect(await recordRun.call(store, s.sessionId)).toEqual({ run: 7, withoutProgress: 3 });
      expect(await recordRun.call(store, s.sessionId, undefined, 2n ** 62n)).toEqual({ run: 8, withoutProgress: 0 });
      expect(await recordRun.call(store, s.sessionId, undefined, 2n ** 62n)).toEqual({ run: 9, withoutProgress: 1 });
      await expect(recordRun.call(store, randomUUID())).rejects.toThrow();
      // The first re-run of a session counts as progress what its first run committed, if anything.
      const other = session({ idempotencyKey: "key-2" });
      await store.createSession(other, [], startAttempt(other));
      expect(await recordRun.call(store, other.sessionId, undefined, 0n)).toEqual({ run: 2, withoutProgress: 1 });
      const third = session({ idempotencyKey: "key-3" });
      await store.createSession(third, [], startAttempt(third));
      expect(await recordRun.call(store, third.sessionId, undefined, 3n)).toEqual({ run: 2, withoutProgress: 0 });
      // A drain's hand-over (optional): the next re-run counts as one that found progress, whatever it measures.
      if (store.recordHandOver !== undefined) {
        await store.recordHandOver(s.sessionId);
        expect(await recordRun.call(store, s.sessionId, undefined, 2n ** 62n)).toEqual({ run: 10, withoutProgress: 0 });
        expect(await recordRun.call(store, s.sessionId, undefined, 2n ** 62n)).toEqual({ run: 11, withoutProgress: 1 });
        // Handed over in its first run: the first re-run's 0 is progress too.
        const fourth = session({ idempotencyKey: "key-4" });
        await store.createSession(fourth, [], startAttempt(fourth));
        await store.recordHandOver(fourth.sessionId);
        expect(await recordRun.call(store, fourth.sessionId, undefined, 0n)).toEqual({ run: 2, withoutProgress: 0 });
        await expect(store.recordHandOver(randomUUID())).rejects.toThrow();
      }

      await store.finish(s.sessionId, '{"kind":"success"}', 1000);
      await expect(appendJournal.call(store, entry(3, "late", '{"value":1}'))).rejects.toThrow();
      await expect(appendJournal.call(store, entry(2, "other", '{"value":1}'))).rejects.toThrow();
      await expect(recordRun.call(store, s.sessionId)).rejects.toThrow();
      if (store.recordHandOver !== undefined) await expect(store.recordHandOver(s.sessionId)).rejects.toThrow();
      expect(await readJournal.call(store, s.sessionId)).toHaveLength(3);
      expect(await store.purgeFinished(1001, 2000, 0)).toBe(1);
      expect(await readJournal.call(store, s.sessionId)).toEqual([]);
      await store.close();
    });
  });
}

/** A session with one input stream in `store`, and a builder of that stream's chunks (one item per character of `text`). */
async function withInputStream(store: SessionStore): Promise<{ input: NewStream; chunk: (sequence: bigint, text: string) => InputChunk }> {
  const s = session();
  const input = stream(s.sessionId, "input");
  await store.createSession(s, [input], startAttempt(s));
  const chunk = (sequence: bigint, text: string): InputChunk => ({
    streamId: input.streamId,
    sequence,
    itemCount: BigInt(text.length),
    data: bytes(text),
    mimeType: undefined,
  });
  return { input, chunk };
}
