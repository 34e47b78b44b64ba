/**
 * `limits.detachedSessionTimeoutMs`: a running session that nobody attaches
 * to for that long is given up. Its open streams end `transport-detached`
 * in the store (protocol 6.7: a reason only durable state reports), so an
 * invocation whose client is gone for good ends instead of running until a
 * restart; a client that comes back later reads those terminals and the
 * outcome. An attach before then starts the wait over.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { Logger } from "../src/index.js";
import { RawClient, demoStart, startTestServer, v, type TestServer } from "./helpers.js";

const TIMEOUT_MS = 300;

/** A logger that keeps every line's fields, and resolves waiters on the event they wait for. */
function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const waiters: { event: string; resolve: () => void }[] = [];
  const note = (_message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
    lines.push({ ...fields });
    for (const waiter of waiters.filter((w) => w.event === fields["event"])) waiter.resolve();
  };
  const logger: Logger = { info: note, warn: note, error: note };
  const next = (event: string) => new Promise<void>((resolve) => waiters.push({ event, resolve }));
  return { logger, lines, next, count: (event: string) => lines.filter((line) => line["event"] === event).length };
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

/** A server with `detachedSessionTimeoutMs`, and a long `count` started on it: its connection, acceptance and log. */
async function countOn(detachedSessionTimeoutMs: number) {
  const log = recordingLogger();
  server = await startTestServer({ logger: log.logger, limits: { detachedSessionTimeoutMs } });
  const first = await RawClient.connect(server.url);
  first.send(demoStart("count", v.record(v.u32(1_000_000), v.u32(5))));
  const accepted = await first.nextOf("invocationAccepted");
  return { log, first, accepted, url: server.url };
}

/** Resumes the session and reads it to its end: the output ended transport-detached. */
async function endedDetached(url: string, sessionToken: string) {
  const back = await RawClient.connect(url);
  back.send(resume(sessionToken));
  const { messages } = await back.all();
  expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({ outcome: { kind: "cancelled", reason: "transport-detached" } });
  return messages;
}

const resume = (sessionToken: string) => ({ type: "resumeAttach" as const, attemptId: randomUUID(), operation: "resume" as const, outputCursors: [], sessionToken });

describe("a running session without any attachment for detachedSessionTimeoutMs", () => {
  it("is given up: its output ends cancelled with transport-detached, durably; a client coming back reads that and the outcome", async () => {
    const { log, first, accepted, url } = await countOn(TIMEOUT_MS);
    await first.nextOf("invocationResult");
    const givenUp = log.next("session.given-up");
    first.socket.terminate();
    await givenUp;

    const messages = await endedDetached(url, accepted.sessionToken);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(log.count("session.given-up")).toBe(1);
  });

  it("an attach before the timeout starts the wait over: attached for longer than the timeout, nothing is given up", async () => {
    const { log, first, accepted, url } = await countOn(TIMEOUT_MS);
    first.socket.terminate();

    // Back at once, and attached for three timeouts while items keep coming.
    const back = await RawClient.connect(url);
    back.send(resume(accepted.sessionToken));
    const reaccepted = await back.nextOf("invocationAccepted");
    const until = Date.now() + 3 * TIMEOUT_MS;
    while (Date.now() < until) {
      const message = await back.next();
      expect(message.type === "outputStreamEnd" && message.outcome.kind === "cancelled").toBe(false);
    }
    expect(log.count("session.given-up")).toBe(0);

    // Detached again: the wait starts from this detach, and ends the session as before.
    const givenUp = log.next("session.given-up");
    back.socket.terminate();
    await givenUp;
    await endedDetached(url, reaccepted.sessionToken);
  });

  it("a limit above setTimeout's ceiling never gives up (no timer at all)", async () => {
    const { log, first } = await countOn(2 ** 31);
    first.socket.terminate();
    // Node warns and fires at once for a delay above its ceiling: a timer armed here would give the session up now.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(log.count("session.given-up")).toBe(0);
  });
});
