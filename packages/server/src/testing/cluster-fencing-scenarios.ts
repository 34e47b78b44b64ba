/**
 * Cluster scenarios (cluster-scenarios.ts), fencing and drain: a former owner's writes,
 * output and input, land after another node claimed the session and are
 * refused (the client at the former owner is closed 1001 and resumes at the
 * claimer); a drain detaches clients and finishes what the node runs.
 */
import { randomUUID } from "node:crypto";
import { inspectToken } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { Logger, ServerLimits } from "../options.js";
import { demoStart, outputValues, v } from "./demo-messages.js";
import { RawClient } from "./raw-client.js";
import { intercepting, UNTIL_SILENT } from "./cluster-harness.js";
import type { Accepted, ClusterHarness } from "./cluster-harness.js";
import type { TestApi } from "./store-contract.js";

export function fencingScenarios(api: TestApi, cluster: ClusterHarness): void {
  const { it, expect } = api;
  const { startCluster, resume, startThenResume, closedByScenario } = cluster;
  /**
   * Two nodes where A (the owner) stalls on demand: its heartbeats stop and its output and input
   * writes are held until after B has claimed; B's own terminals (its first writes after the
   * claim) wait until A's held writes have landed. So those reach the store after the claim and
   * before B's terminals: the window only fencing closes. `limits`: the nodes' (re-runs off, B
   * fails what it claims and its first writes are its terminals; on, B re-runs it and its first
   * write is the first output item past what A committed).
   */
  async function stallingOwner(limits: Partial<ServerLimits> = {}) {
    let stalled = false;
    let releaseA!: () => void;
    const aMayWrite = new Promise<void>((resolve) => (releaseA = resolve));
    const state = { committedByA: 0n, heldAtA: [] as Promise<unknown>[] };
    let claimedByB!: () => void;
    const bClaimed = new Promise<void>((resolve) => (claimedByB = resolve));
    let releaseB!: () => void;
    const bMayWrite = new Promise<void>((resolve) => (releaseB = resolve));
    /** A's write, held while A is stalled: it goes once B has claimed, and its outcome is kept. */
    const heldAtA = <T>(write: () => Promise<T>): Promise<T> => {
      const held = aMayWrite.then(write);
      state.heldAtA.push(
        held.then(
          () => "stored",
          (error: unknown) => (error as { code?: unknown }).code,
        ),
      );
      return held;
    };
    const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore => {
      if (index === 1) {
        return intercepting(store, {
          appendOutput: async (event, introduced, epoch) => {
            claimedByB();
            await bMayWrite;
            return store.appendOutput(event, introduced, epoch);
          },
          endInput: async (streamId, terminal, epoch) => {
            if (terminal.kind === "cancelled" && terminal.by === "server") {
              claimedByB();
              await bMayWrite;
            }
            return store.endInput(streamId, terminal, epoch);
          },
        });
      }
      return intercepting(store, {
        heartbeat: (ttlMs) => (stalled ? Promise.resolve() : store.heartbeat(ttlMs)),
        acceptInput: (chunk, introduced, epoch) =>
          stalled ? heldAtA(() => store.acceptInput(chunk, introduced, epoch)) : store.acceptInput(chunk, introduced, epoch),
        appendOutput: (event, introduced, epoch) => {
          if (!stalled)
            return store
              .appendOutput(event, introduced, epoch)
              .then(() => void (state.committedByA += event.event === "item" ? event.itemCount : 0n));
          return heldAtA(() => store.appendOutput(event, introduced, epoch));
        },
      });
    };
    let lostAtA!: () => void;
    const aLost = new Promise<void>((resolve) => (lostAtA = resolve));
    const quiet = () => undefined;
    const logger = (index: number): Logger => ({
      info: quiet,
      error: quiet,
      warn: (_message, fields) => {
        if (index === 0 && fields?.["event"] === "session.ownership-lost") lostAtA();
      },
    });
    const {
      stores,
      nodes: [a, b],
    } = await startCluster(2, { leaseTtlMs: 300, wrap, logger, limits });
    /** Stalls A (then runs `whileStalled`), waits for B's claim, lets A's held writes land (refused), then lets B write. */
    const stallUntilClaimed = async (whileStalled?: () => void) => {
      stalled = true;
      whileStalled?.();
      await bClaimed;
      releaseA();
      await Promise.all(state.heldAtA.slice());
      releaseB();
    };
    return { stores, a: a!, b: b!, state, aLost, stallUntilClaimed };
  }

  /** Re-runs off: B fails the invocation it claims, its terminals its first writes after the claim. */
  const FAIL_WHAT_IS_CLAIMED = { maxReplays: 0 } as const;

  /** The stream's end and the outcome: B's failure of the invocation it claimed. */
  function expectClaimersOutcome(messages: readonly ServerMessage[]): number {
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const channel = result.mappings[0]!.channel;
    expect(messages.find((m) => m.type === "outputStreamEnd" && m.channel === channel)).toMatchObject({
      outcome: { kind: "cancelled", reason: "invocation-failed" },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
    return channel;
  }

  it("fencing: A's lease lapses while its output writes are still on their way; they reach the store after B's claim and before B's terminals, and every one is refused: the client sees B's outcome right after A's last committed item, and A stops at once", async () => {
    const { stores, a, b, state, aLost, stallUntilClaimed } = await stallingOwner(FAIL_WHAT_IS_CLAIMED);
    const { accepted, client: atB } = await startThenResume(a, b, demoStart("count", v.record(v.u32(100000), v.u32(5))));
    await atB.waitFor((m) => m.type === "outputStreamItem");
    await stallUntilClaimed();
    const { messages } = await atB.all(UNTIL_SILENT);
    const channel = expectClaimersOutcome(messages);
    // Every held write of A was refused for its epoch; the stream holds exactly what A committed before.
    const outcomes = await Promise.all(state.heldAtA);
    expect(outcomes.length).toBeGreaterThan(0);
    expect(new Set(outcomes)).toEqual(new Set(["ownership-lost"]));
    expect(BigInt(outputValues(messages, channel).length)).toBe(state.committedByA);
    const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
    const stored = (await stores[1]!.listStreams(sessionId)).find((s) => s.direction === "output");
    expect(stored?.count).toBe(state.committedByA);
    // A stopped the invocation at its first refused write and runs nothing.
    await aLost;
    expect(await a.server.drain(0)).toEqual({ failed: 0, handedOver: 0 });
    closedByScenario(a);
  });

  it("fencing with a re-run: A's held output writes land after B's claim and are refused; B re-runs the invocation past A's committed items, and the client sees every item once and success", async () => {
    const { a, b, state, aLost, stallUntilClaimed } = await stallingOwner();
    const { client: atB } = await startThenResume(a, b, demoStart("count", v.record(v.u32(200), v.u32(5))));
    const result = await atB.nextOf("invocationResult");
    await atB.waitFor((m) => m.type === "outputStreamItem");
    await stallUntilClaimed();
    const { messages } = await atB.all(UNTIL_SILENT);
    expect(outputValues(messages, result.mappings[0]!.channel).map((item) => item.value)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    const outcomes = await Promise.all(state.heldAtA);
    expect(outcomes.length).toBeGreaterThan(0);
    expect(new Set(outcomes)).toEqual(new Set(["ownership-lost"]));
    await aLost;
    expect(await a.server.drain(0)).toEqual({ failed: 0, handedOver: 0 });
    closedByScenario(a);
  });

  it("fencing: the client attached at the former owner is closed (1001) at A's first refused write; it resumes at B and reads A's committed items, then B's outcome", async () => {
    const { a, b, state, aLost, stallUntilClaimed } = await stallingOwner(FAIL_WHAT_IS_CLAIMED);
    const atA = await RawClient.connect(a.url);
    atA.send(demoStart("count", v.record(v.u32(100000), v.u32(5))));
    const accepted = (await atA.nextOf("invocationAccepted")) as Accepted;
    await atA.waitFor((m) => m.type === "outputStreamItem");
    await stallUntilClaimed();
    expect((await atA.closed).code).toBe(1001);
    await aLost;
    const atB = await RawClient.connect(b.url);
    atB.send(resume("resume", accepted.sessionToken));
    const { messages } = await atB.all(UNTIL_SILENT);
    const channel = expectClaimersOutcome(messages);
    expect(BigInt(outputValues(messages, channel).length)).toBe(state.committedByA);
    expect(outputValues(messages, channel)).toEqual(Array.from({ length: Number(state.committedByA) }, (_, i) => v.u32(i)));
  });

  it("fencing: input the client sends to the former owner is refused with its epoch after the claim: that connection is closed (1001, not an internal error), the client resumes at B and finds the input ended by B, and A's outputs, then B's outcome", async () => {
    const { a, b, state, aLost, stallUntilClaimed, stores } = await stallingOwner(FAIL_WHAT_IS_CLAIMED);
    const atA = await RawClient.connect(a.url);
    atA.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = (await atA.nextOf("invocationAccepted")) as Accepted;
    const input = accepted.mappings[0]!.channel;
    atA.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("abc") });
    await atA.waitFor((m) => m.type === "outputStreamItem");
    // Sent while A stalls: its commit reaches the store after B's claim.
    await stallUntilClaimed(() => atA.send({ type: "inputStreamItem", channel: input, sequence: 1n, value: v.str("def") }));
    const { messages: atAMessages, closed } = await atA.all(UNTIL_SILENT);
    expect(closed.code).toBe(1001);
    expect(atAMessages.filter((m) => m.type === "inputStreamAck" && m.highestContiguousSequence >= 2n)).toEqual([]);
    await aLost;
    expect(await Promise.all(state.heldAtA)).toContain("ownership-lost");
    const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
    expect((await stores[1]!.listStreams(sessionId)).find((s) => s.direction === "input")?.count).toBe(1n);

    const atB = await RawClient.connect(b.url);
    atB.send(resume("resume", accepted.sessionToken));
    const reaccepted = (await atB.nextOf("invocationAccepted")) as Accepted;
    expect(reaccepted.mappings.find((m) => m.direction === "input")?.inputHighWater).toEqual({ sequence: 1n, terminal: true });
    const { messages } = await atB.all(UNTIL_SILENT);
    const channel = expectClaimersOutcome(messages);
    expect(outputValues(messages, channel)).toEqual([v.str("cba")]);
  });

  it("drain: A refuses new connections, detaches its client (1001), finishes what it runs; the client resumes at B and reads everything", async () => {
    const [a, b] = (await startCluster(2)).nodes;
    const first = await RawClient.connect(a!.url);
    first.send(demoStart("count", v.record(v.u32(30), v.u32(10))));
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    await first.waitFor((m) => m.type === "outputStreamItem");
    const drained = a!.server.drain(10_000);
    expect((await first.closed).code).toBe(1001);
    await expect(RawClient.connect(a!.url)).rejects.toThrow();
    const second = await RawClient.connect(b!.url);
    second.send(resume("resume", accepted.sessionToken));
    const { messages } = await second.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    expect(outputValues(messages, result.mappings[0]!.channel).map((item) => item.value)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(await drained).toEqual({ failed: 0, handedOver: 0 });
    closedByScenario(a);
  });

  it("drain: a success whose finish is being committed at the deadline stays a success, in the store, for the client and in the drain's count", async () => {
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let successPending!: () => void;
    const pending = new Promise<void>((resolve) => (successPending = resolve));
    const held = async (outcome: string): Promise<void> => {
      if (outcome.includes('"success"')) {
        successPending();
        await gate;
      }
    };
    // The success goes through `finish`, or with the result through `finishWithResult` where the store has it.
    const finishWithResult = (store: ClusterSessionStore): Partial<ClusterSessionStore> => {
      const write = store.finishWithResult?.bind(store);
      if (write === undefined) return {};
      return {
        finishWithResult: async (sessionId, result, outcome, at, epoch) => {
          await held(outcome);
          return write(sessionId, result, outcome, at, epoch);
        },
      };
    };
    const slowSuccess = (_: number, store: ClusterSessionStore): ClusterSessionStore =>
      intercepting(store, {
        finish: async (...args) => {
          await held(args[1]);
          return store.finish(...args);
        },
        ...finishWithResult(store),
      });
    const {
      stores,
      nodes: [a],
    } = await startCluster(1, { wrap: slowSuccess });
    const client = await RawClient.connect(a!.url);
    client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = (await client.nextOf("invocationAccepted")) as Accepted;
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("ab") });
    client.send({ type: "inputStreamEnd", channel, sequence: 1n });
    await pending;
    // The deadline is now: the drain fails what still runs, while the success is being committed.
    const drained = a!.server.drain(0);
    setTimeout(openGate, 50);
    expect(await drained).toEqual({ failed: 0, handedOver: 0 });
    const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
    const stored = (await stores[0]!.getSession(sessionId))!;
    expect(JSON.parse(stored.outcome!)).toMatchObject({ kind: "success" });
    expect(JSON.parse(stored.result!)).toMatchObject({ kind: "value" });
    const { messages } = await client.all(UNTIL_SILENT);
    expect(messages.map((m) => m.type)).not.toContain("invocationRejected");
    // Recorded apart, the result reached the client before its finish was held; recorded with the
    // success, it was not durable yet when the drain detached the client, which resumes on another
    // node to read both.
    if (stores[0]!.finishWithResult === undefined) expect(messages.map((m) => m.type)).toContain("invocationResult");
    closedByScenario(a);
  });
}
