/**
 * Cluster scenarios (cluster-scenarios.ts), owner loss: a node's lease lapses (it stopped,
 * or its heartbeats stall while it lives) and another node claims its
 * sessions, re-running the replayable ones or failing the rest; a store
 * outage longer than a lease claims nothing.
 */
import { randomUUID, createHash } from "node:crypto";
import { inspectToken } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { Logger } from "../options.js";
import { Conditions } from "./conditions.js";
import { demoStart, outputValues, v } from "./demo-messages.js";
import { RawClient } from "./raw-client.js";
import { intercepting, UNTIL_SILENT } from "./cluster-harness.js";
import type { Accepted, ClusterHarness } from "./cluster-harness.js";
import type { TestApi } from "./store-contract.js";

export function ownerLossScenarios(api: TestApi, cluster: ClusterHarness): void {
  const { it, expect } = api;
  const { startCluster, resume, startThenResume, closedByScenario } = cluster;
  it("the owner's lease lapses (node A stops without a word): another node re-runs a replayable invocation; the client at B gets every item once and success", async () => {
    const {
      nodes: [a, b],
    } = await startCluster(2, { leaseTtlMs: 300 });
    const { client: second } = await startThenResume(a!, b!, demoStart("count", v.record(v.u32(40), v.u32(5))));
    const result = await second.nextOf("invocationResult");
    await second.waitFor((m) => m.type === "outputStreamItem");
    // A dies: its invocation stops, nothing more is recorded, its lease is no longer renewed.
    await a!.server.close();
    closedByScenario(a);
    const { messages } = await second.all(UNTIL_SILENT);
    expect(outputValues(messages, result.mappings[0]!.channel).map((item) => item.value)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("digest: the owner's lease lapses mid-upload; the node that claims it re-runs it over the stored input, and the rest of the upload completes it", async () => {
    const {
      nodes: [a, b],
    } = await startCluster(2, { leaseTtlMs: 300 });
    const { client: second } = await startThenResume(a!, b!, demoStart("digest", v.record(v.stream(randomUUID()))));
    const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
    const input = reaccepted.mappings.find((m) => m.direction === "input")!.channel;
    const data = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 13) % 251);
    second.send({ type: "input-u8", channel: input, sequence: 0n, payload: data.subarray(0, 100_000) });
    await second.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 100_000n);
    await a!.server.close();
    closedByScenario(a);
    second.send({ type: "input-u8", channel: input, sequence: 100_000n, payload: data.subarray(100_000) });
    second.send({ type: "inputStreamEnd", channel: input, sequence: 200_000n });
    const { messages } = await second.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult");
    expect(result).toMatchObject({
      result: { value: { value: { fields: [{ value: "200000" }, { value: createHash("sha256").update(data).digest("hex") }] } } },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("the owner's lease lapses (node A stops without a word) with re-runs off: another node finishes its invocation; the client at B gets terminals and invocation-failed", async () => {
    const {
      nodes: [a, b],
    } = await startCluster(2, { leaseTtlMs: 300, limits: { maxReplays: 0 } });
    const { accepted, client: second } = await startThenResume(a!, b!, demoStart("count", v.record(v.u32(100000), v.u32(5))));
    await second.waitFor((m) => m.type === "outputStreamItem");
    // A dies: its invocation stops, nothing more is recorded, its lease is no longer renewed.
    await a!.server.close();
    closedByScenario(a);
    const { messages } = await second.all(UNTIL_SILENT);
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      outcome: { kind: "cancelled", reason: "invocation-failed" },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
    // Everything produced before stays replayable.
    const replay = await RawClient.connect(b!.url);
    replay.send(resume("takeover", accepted.sessionToken));
    const again = await replay.all(UNTIL_SILENT);
    expect(
      outputValues(
        again.messages,
        (again.messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>).mappings[0]!
          .channel,
      ),
    ).toEqual(
      outputValues(
        messages,
        (messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>).mappings[0]!.channel,
      ),
    );
  });

  it("the store out of reach of both nodes for longer than a lease: A, back first, claims none of B's sessions while B comes back within a lease", async () => {
    // Lease 600 ms: heartbeats every 200 ms, claims every 300 ms.
    const LEASE_MS = 600;
    /** Per node: the store out of reach for heartbeats; A's fail, B's hang until it is back (a connection that hung). */
    const down = [false, false];
    const failed = [0, 0];
    const renewed = [0, 0];
    let claims = 0;
    const held: (() => void)[] = [];
    const progress = new Conditions();
    const wake = (): void => progress.check();
    const until = (condition: () => boolean): Promise<void> => progress.until(condition);
    const reachable = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      intercepting(store, {
        heartbeat: async (ttlMs) => {
          if (down[index] && index === 0) {
            failed[index]!++;
            wake();
            throw new Error("connect ECONNREFUSED");
          }
          if (down[index]) {
            failed[index]!++;
            wake();
            await new Promise<void>((resolve) => held.push(resolve));
          }
          await store.heartbeat(ttlMs);
          renewed[index]!++;
          wake();
        },
        claimOrphans: async () => {
          const claimed = await store.claimOrphans();
          if (index === 0) claims++;
          wake();
          return claimed;
        },
      });
    const {
      nodes: [, b],
      stores,
    } = await startCluster(2, { leaseTtlMs: LEASE_MS, wrap: reachable });
    // An invocation B runs, idle for a minute before its first item: nothing but a claim could end it.
    const atB = await RawClient.connect(b!.url);
    atB.send(demoStart("count", v.record(v.u32(3), v.u32(60_000))));
    const accepted = (await atB.nextOf("invocationAccepted")) as Accepted;
    await atB.waitFor((m) => m.type === "invocationResult");
    const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
    // Both lose the store for four heartbeats, longer than a lease: both leases lapse.
    down[0] = down[1] = true;
    await until(() => failed[0]! >= 4 && failed[1]! >= 4);
    // A is back first. Three of its heartbeats, two periods: a claim every 300 ms would have run meanwhile.
    down[0] = false;
    const back = renewed[0]!;
    const claimsBefore = claims;
    await until(() => renewed[0]! >= back + 3);
    expect(claims).toBe(claimsBefore);
    // B is back within A's first lease of availability; its hung heartbeats go through now.
    down[1] = false;
    for (const release of held.splice(0)) release();
    // A claims again once it has seen the store for a full lease: B's lease is live by then.
    await until(() => claims >= claimsBefore + 2);
    expect(await stores[0]!.ownerOf(sessionId)).toBe(b!.id);
    expect((await stores[0]!.getSession(sessionId))?.state).toBe("running");
    atB.terminate();
  });

  it("A's lease lapses while A is alive (its heartbeats stall): B claims and re-runs the invocation, the rest of the upload completes it there, and A stops running it", async () => {
    let stalled = false;
    const stallable = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index !== 0 ? store : intercepting(store, { heartbeat: (ttlMs) => (stalled ? Promise.resolve() : store.heartbeat(ttlMs)) });
    let stoppedAtA!: (event: unknown) => void;
    const stopped = new Promise<unknown>((resolve) => (stoppedAtA = resolve));
    let rerunAtB!: () => void;
    const rerun = new Promise<void>((resolve) => (rerunAtB = resolve));
    const quiet = () => undefined;
    const watch = (index: number): Logger => ({
      info: (_message, fields) => {
        if (index === 1 && fields?.["event"] === "invocation.replay") rerunAtB();
      },
      error: quiet,
      // A learns that B owns the session from the change feed (B finished it) or from its own
      // write, refused for its epoch (fencing): either way its invocation stops there.
      warn: (_message, fields) => {
        const event = fields?.["event"];
        if (index === 0 && (event === "session.finished-elsewhere" || event === "session.ownership-lost")) stoppedAtA(event);
      },
    });
    const {
      nodes: [a, b],
    } = await startCluster(2, { leaseTtlMs: 300, wrap: stallable, logger: watch });
    // An agent that waits for its input: while nobody sends any, A writes nothing that a refusal could stop.
    const { client: atB } = await startThenResume(a!, b!, demoStart("digest", v.record(v.stream(randomUUID()))));
    const reaccepted = (await atB.nextOf("invocationAccepted")) as Accepted;
    const input = reaccepted.mappings.find((m) => m.direction === "input")!.channel;
    const data = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7) % 251);
    atB.send({ type: "input-u8", channel: input, sequence: 0n, payload: data.subarray(0, 100_000) });
    await atB.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 100_000n);
    stalled = true;
    // B claims the session once A's lease has lapsed, and re-runs it over the stored input.
    await rerun;
    atB.send({ type: "input-u8", channel: input, sequence: 100_000n, payload: data.subarray(100_000) });
    atB.send({ type: "inputStreamEnd", channel: input, sequence: 200_000n });
    const { messages } = await atB.all(UNTIL_SILENT);
    expect(messages.find((m) => m.type === "invocationResult")).toMatchObject({
      result: { value: { value: { fields: [{ value: "200000" }, { value: createHash("sha256").update(data).digest("hex") }] } } },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    // A stops the agent it no longer owns.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error("A kept running the invocation B had claimed")), 10_000)),
    );
    expect(["session.finished-elsewhere", "session.ownership-lost"]).toContain(
      await Promise.race([stopped, late]).finally(() => clearTimeout(timer)),
    );
    expect(await a!.server.drain(0)).toEqual({ failed: 0, handedOver: 0 });
    closedByScenario(a);
  });

  it("A's lease lapses while A still runs the invocation, B claims it and stops too, and A claims it back: A's earlier run stops and one re-run writes each item once; the client resumes and gets every item once", async () => {
    let stalled = false;
    const written: string[] = [];
    const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      intercepting(store, {
        heartbeat: (ttlMs) => (index === 0 && stalled ? Promise.resolve() : store.heartbeat(ttlMs)),
        appendOutput: async (event, introduced, epoch) => {
          await store.appendOutput(event, introduced, epoch);
          written.push(`${event.event} ${event.sequence} at epoch ${epoch}`);
        },
      });
    const reruns = [0, 1].map(() => {
      let seen!: () => void;
      return { seen: new Promise<void>((resolve) => (seen = resolve)), tell: () => seen() };
    });
    const quiet = () => undefined;
    const logger = (index: number): Logger => ({
      info: (_message, fields) => {
        if (fields?.["event"] === "invocation.replay") reruns[index]!.tell();
      },
      warn: quiet,
      error: quiet,
    });
    const {
      nodes: [a, b],
    } = await startCluster(2, { leaseTtlMs: 300, wrap, logger });
    // Items 2 s apart: A's first run writes nothing before it claims the session back (about a
    // second: two leases and a claim), so no refused write stops it first.
    const atA = await RawClient.connect(a!.url);
    atA.send(demoStart("count", v.record(v.u32(3), v.u32(2000))));
    const accepted = (await atA.nextOf("invocationAccepted")) as Accepted;
    stalled = true;
    await reruns[1]!.seen; // B claimed and re-runs it
    await b!.server.close(); // B stops before its re-run writes anything
    closedByScenario(b);
    stalled = false;
    await reruns[0]!.seen; // A claims it back
    // The client at A was closed (1001) as its earlier run stopped; it resumes there.
    atA.terminate();
    const client = await RawClient.connect(a!.url);
    client.send(resume("resume", accepted.sessionToken));
    const { messages } = await client.all(UNTIL_SILENT);
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    expect(outputValues(messages, result.mappings[0]!.channel).map((item) => item.value)).toEqual([0, 1, 2]);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    // The writes the store took at the last epoch (A's claim back) are the re-run's alone: each
    // item once, after those B's re-run wrote before it stopped (if any), then the end.
    const last = written.map((w) => BigInt(w.split(" at epoch ")[1]!)).reduce((x, y) => (y > x ? y : x));
    const atLast = written.filter((w) => w.endsWith(` at epoch ${last}`)).map((w) => w.split(" at epoch ")[0]!);
    const from = 3 - (atLast.length - 1);
    expect(atLast).toEqual([...Array.from({ length: 3 - from }, (_, i) => `item ${from + i}`), "terminal 3"]);
  });

  it("a store failure while the claimer fails one of the sessions it claimed leaves none of them running: the rest are failed at once, that one at the next claim", async () => {
    let failNextFinish = true;
    let finished = 0;
    const progress = new Conditions();
    const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      index !== 1
        ? store
        : intercepting(store, {
            // One failure of the store right after B's claim, on the first session it fails.
            finish: async (sessionId, outcome, at, epoch) => {
              if (failNextFinish) {
                failNextFinish = false;
                throw new Error("the store failed once");
              }
              await store.finish(sessionId, outcome, at, epoch);
              finished++;
              progress.check();
            },
          });
    const {
      stores,
      nodes: [a],
    } = await startCluster(2, { leaseTtlMs: 300, wrap, limits: { maxReplays: 0 } });
    for (let i = 0; i < 3; i++) {
      const client = await RawClient.connect(a!.url);
      client.send(demoStart("count", v.record(v.u32(3), v.u32(60_000))));
      await client.nextOf("invocationAccepted");
      client.terminate();
    }
    await a!.server.close(); // A dies: B claims its three sessions once A's lease lapses
    closedByScenario(a);
    await progress.until(() => finished === 3);
    expect(failNextFinish).toBe(false);
    expect(await stores[1]!.listRunningSessions()).toEqual([]);
  });

  it("a claimed session whose handling failed, claimed back later by the same node after another node ran it, is run there once: the next claims leave that run alone", async () => {
    const progress = new Conditions();
    const state = { failLoadsAtB: false, stalled: [false, false, false], cMayClaim: false, reclaiming: false, claimsAtBSince: 0 };
    const replays = [0, 0, 0];
    let claimFailedAtB = false;
    let sessionId = "";
    const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
      intercepting(store, {
        heartbeat: (ttlMs) => (state.stalled[index] ? Promise.resolve() : store.heartbeat(ttlMs)),
        // B cannot load the session while its first claim is handled, nor while C has it.
        listStreams: (id) => (index === 1 && state.failLoadsAtB ? Promise.reject(new Error("the store failed")) : store.listStreams(id)),
        claimOrphans: async () => {
          if (index === 2 && !state.cMayClaim) return [];
          const claimed = await store.claimOrphans();
          if (index === 1) {
            // B claims the session back from C: this time its handling goes through.
            if (state.reclaiming && claimed.includes(sessionId)) state.failLoadsAtB = false;
            state.claimsAtBSince++;
            progress.check();
          }
          return claimed;
        },
      });
    const logger = (index: number): Logger => ({
      info: (_message, fields) => {
        if (fields?.["event"] === "invocation.replay") replays[index]!++;
        progress.check();
      },
      warn: () => undefined,
      error: (_message, fields) => {
        if (index === 1 && fields?.["event"] === "session.claim-failed") claimFailedAtB = true;
        progress.check();
      },
    });
    const {
      nodes: [a, , c],
    } = await startCluster(3, { leaseTtlMs: 300, wrap, logger });
    const atA = await RawClient.connect(a!.url);
    // Replayable, and running for a minute: only a claim ends a run of it.
    atA.send(demoStart("count", v.record(v.u32(1), v.u32(60_000))));
    const accepted = (await atA.nextOf("invocationAccepted")) as Accepted;
    sessionId = (inspectToken(accepted.sessionToken).fields as { sessionId: string }).sessionId;
    atA.terminate();
    // A dies; B claims the session and fails to load it.
    state.failLoadsAtB = true;
    await a!.server.close();
    closedByScenario(a);
    await progress.until(() => claimFailedAtB);
    // B's lease lapses (its heartbeats stall); C claims the session and runs it.
    state.stalled[1] = true;
    state.cMayClaim = true;
    await progress.until(() => replays[2] === 1);
    // C's lease lapses instead; B, alive again, claims the session back and runs it.
    state.cMayClaim = false;
    state.stalled[2] = true;
    state.reclaiming = true;
    state.stalled[1] = false;
    await progress.until(() => replays[1] === 1);
    // Two more claims at B: neither takes the session again (which would stop B's run and start another).
    state.claimsAtBSince = 0;
    await progress.until(() => state.claimsAtBSince >= 2);
    expect(replays).toEqual([0, 1, 1]);
    closedByScenario(c);
    await c!.server.close();
  });
}
