/**
 * `limits.detachedSessionTimeoutMs`: a running session that nobody attaches
 * to for that long is given up. Its open streams end `transport-detached`
 * in the store (protocol 6.7: a reason only durable state reports), so an
 * invocation whose client is gone for good ends instead of running until a
 * restart; a client that comes back later reads those terminals and the
 * outcome. An attach before then starts the wait over.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualTimers } from "../src/testing/index.js";
import { MemorySessionStore, t, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { RawClient, agentStart, demoStart, serveTestAgents, startTestServer, v, type TestServer, resumeAttach } from "./helpers.js";
import { recordingLogger } from "./support/recording-logger.js";

/** The limit; time moves only through `ManualTimers`, so its value says nothing about how long a test takes. */
const TIMEOUT_MS = 60_000;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

/** A server with `detachedSessionTimeoutMs` on manual timers, and a long `count` started on it: its connection, acceptance, log and timers. */
async function countOn(detachedSessionTimeoutMs: number) {
  const log = recordingLogger();
  const timers = new ManualTimers();
  // No pings: time jumps here by more than two ping intervals in one step, where no pong could come
  // between, and the pending timers counted are the detached watch's only.
  server = await startTestServer({ logger: log.logger, limits: { detachedSessionTimeoutMs, pingIntervalMs: 0 }, timers });
  const first = await RawClient.connect(server.url);
  first.send(demoStart("count", v.record(v.u32(1_000_000), v.u32(5))));
  const accepted = await first.nextOf("invocationAccepted");
  return { log, timers, first, accepted, url: server.url };
}

/**
 * Cuts `client` off and resolves once the server has ended its attachment
 * (`attach.end` is logged just before the session learns it is detached,
 * in the same turn: the wait, if any, is armed when this resolves).
 */
async function detach(log: ReturnType<typeof recordingLogger>, client: RawClient): Promise<void> {
  const ended = log.next("attach.end");
  client.socket.terminate();
  await ended;
}

/** Resumes the session and reads it to its end: the output ended transport-detached. */
async function endedDetached(url: string, sessionToken: string) {
  const back = await RawClient.connect(url);
  back.send(resumeAttach("resume", sessionToken));
  const { messages } = await back.all();
  expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
    outcome: { kind: "cancelled", reason: "transport-detached" },
  });
  return messages;
}

describe("a running session without any attachment for detachedSessionTimeoutMs", () => {
  it("is given up: its output ends cancelled with transport-detached, durably; a client coming back reads that and the outcome", async () => {
    const { log, timers, first, accepted, url } = await countOn(TIMEOUT_MS);
    await first.nextOf("invocationResult");
    await detach(log, first);
    // One millisecond short of the limit: still running.
    timers.advance(TIMEOUT_MS - 1);
    expect(log.count("session.given-up")).toBe(0);
    const givenUp = log.next("session.given-up");
    timers.advance(1);
    await givenUp;

    const messages = await endedDetached(url, accepted.sessionToken);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(log.count("session.given-up")).toBe(1);
  });

  it("an attach before the timeout starts the wait over: attached for longer than the timeout, nothing is given up", async () => {
    const { log, timers, first, accepted, url } = await countOn(TIMEOUT_MS);
    await detach(log, first);
    expect(timers.pending).toBe(1);
    timers.advance(TIMEOUT_MS - 1);

    // Back just before the limit: the wait is cancelled, and three timeouts pass while attached.
    const back = await RawClient.connect(url);
    back.send(resumeAttach("resume", accepted.sessionToken));
    const reaccepted = await back.nextOf("invocationAccepted");
    expect(timers.pending).toBe(0);
    timers.advance(3 * TIMEOUT_MS);
    // Items still come, and none of them is a cancellation.
    for (let i = 0; i < 5; i++) {
      const message = await back.next();
      expect(message.type === "outputStreamEnd" && message.outcome.kind === "cancelled").toBe(false);
    }
    expect(log.count("session.given-up")).toBe(0);

    // Detached again: the wait starts from this detach, and ends the session as before.
    await detach(log, back);
    const givenUp = log.next("session.given-up");
    timers.advance(TIMEOUT_MS);
    await givenUp;
    await endedDetached(url, reaccepted.sessionToken);
  });

  it("a limit above setTimeout's ceiling never gives up (no timer at all)", async () => {
    const { log, timers, first } = await countOn(2 ** 31);
    await detach(log, first);
    // Node warns and fires at once for a delay above its ceiling: a timer armed here would give the session up at once.
    expect(timers.pending).toBe(0);
    expect(log.count("session.given-up")).toBe(0);
  });
});

describe("a given-up session whose method has not returned", () => {
  let served: SessionServer | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  /**
   * `ponder` computes its result forever, with no stream to cancel: it only stops when its
   * signal aborts, and `stubborn` not even then. Both resolve `started` when called.
   */
  function thinkers(started: () => void, aborted: (reason: unknown) => void): AgentTypeDefinition {
    const empty = t.graph(t.record({}));
    return {
      name: "thinker",
      constructorParameters: empty,
      config: [],
      methods: [
        { name: "ponder", parameters: empty, result: t.graph(t.string()) },
        { name: "stubborn", parameters: empty, result: t.graph(t.string()) },
      ],
      implementations: {
        ponder: (ctx) =>
          new Promise((_resolve, reject) => {
            started();
            ctx.signal.addEventListener("abort", () => {
              aborted(ctx.signal.reason);
              reject(ctx.signal.reason as Error);
            });
          }),
        stubborn: () => {
          started();
          return new Promise(() => undefined);
        },
      },
    };
  }

  it.each(["ponder", "stubborn"])(
    "%s: fails invocation-failed, its signal aborts, and its principal's running slot is free again",
    async (method) => {
      const log = recordingLogger();
      const timers = new ManualTimers();
      let calls = 0;
      let callStarted: () => void = () => undefined;
      const reasons: unknown[] = [];
      const store = new MemorySessionStore();
      const { server, url } = await serveTestAgents(
        store,
        [
          thinkers(
            () => (calls++, callStarted()),
            (reason) => reasons.push(reason),
          ),
        ],
        {
          logger: log.logger,
          timers,
          // One running invocation at a time: a second start waits for the first one's slot.
          limits: { detachedSessionTimeoutMs: TIMEOUT_MS, pingIntervalMs: 0, maxRunningSessionsPerPrincipal: 1 },
        },
      );
      served = server;
      const running = new Promise<void>((resolve) => (callStarted = resolve));
      const first = await RawClient.connect(url);
      first.send(agentStart("test", "thinker", method, v.record()));
      const accepted = await first.nextOf("invocationAccepted");
      await running;
      await detach(log, first);
      const failed = log.next("invocation.failed");
      timers.advance(TIMEOUT_MS);
      await failed;
      expect(log.lines.find((line) => line["event"] === "invocation.failed")).toMatchObject({
        error: expect.stringMatching(/given up: no attachment for 60000 ms/),
      });
      if (method === "ponder") expect(reasons).toHaveLength(1);

      // A client coming back reads the failure.
      const back = await RawClient.connect(url);
      back.send(resumeAttach("resume", accepted.sessionToken));
      expect((await back.all()).messages.at(-1)).toMatchObject({
        type: "invocationFinished",
        outcome: { kind: "failure", code: "invocation-failed" },
      });
      // The slot is free: another start of the same principal runs.
      const again = new Promise<void>((resolve) => (callStarted = resolve));
      const second = await RawClient.connect(url);
      second.send(agentStart("test", "thinker", method, v.record()));
      await second.nextOf("invocationAccepted");
      await again;
      expect(calls).toBe(2);
      second.terminate();
    },
  );
});
