/**
 * A cancel made after the start was sent but before its answer arrived, on
 * loopback against the real server (docs/protocol/client.md §10a). A proxy
 * lets the start reach the server and keeps every byte of the server's
 * answer from the client, so the client holds a start whose outcome it cannot
 * know; the test cancels, then the proxy resets that connection and relays
 * the next ones.
 *
 * - Accepted: the client must retry the exact frozen start (protocol 9), get
 *   the replayed acceptance, and cancel every stream (`cancelled`) before it
 *   detaches. The invocation the server accepted the first time — named by
 *   the session token the proxy kept, not by anything the client reports —
 *   is then taken over by a second client, which sees its streams cancelled.
 * - Rejected: the retry is rejected again, and that ends it: delivered,
 *   with no further attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvocationAccepted, InvocationStart, ServerMessage } from "@golem-stream/wire";
import { createClient, inputStream, type CancelOutcome, type Invocation, type InvokeOptions, type ResumeState } from "../src/index.js";
import { demo, firstStream, record, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";
import { startMutingProxy, type MutingProxy, type ProxiedConnection } from "./support/muting-proxy.js";
import { acceptanceInputs, endOf, openSource, recording } from "./support/recording.js";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

interface Scene {
  readonly proxy: MutingProxy;
  readonly call: Invocation;
  /** Every message the cancelling client received. */
  readonly heard: readonly ServerMessage[];
  /** Resolves once `predicate()` holds, re-checked on every message the client receives. */
  heardUntil(predicate: () => boolean): Promise<void>;
  /** Resolves with the server's answer to the start, which the client never receives. */
  readonly lostAnswer: Promise<ServerMessage>;
  /** The answer is lost for good: the muted connection is reset, later ones are relayed. */
  lose(): void;
}

/** Invokes through a proxy that mutes the first connection. */
async function unheardStart(options: InvokeOptions, run: (scene: Scene) => Promise<void>): Promise<void> {
  const gate = { muted: true };
  const proxy = await startMutingProxy(server.url, () => gate.muted);
  try {
    const { transport, received: heard, until: heardUntil } = recording();
    const client = createClient({
      url: proxy.url,
      token: TOKEN,
      transport,
      reconnect: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 50 },
    });
    const call = client.invoke(options);
    const lostAnswer = proxy.until(() => (proxy.connections[0]?.answered.length ?? 0) > 0).then(() => proxy.connections[0]!.answered[0]!);
    await run({
      proxy,
      call,
      heard,
      heardUntil,
      lostAnswer,
      lose: () => {
        gate.muted = false;
        proxy.cutMuted();
      },
    });
  } finally {
    await proxy.close();
  }
}

/**
 * Cancels (by `cancel()`, or `by`) once the server has answered the start,
 * checks the caller's side, loses the answer and returns what became of the
 * cancel once the client has closed its last connection, with the types of
 * the messages the client had received when it was reported.
 *
 * `decidedAfter`: the number of messages by which the client must have
 * reported; one more while it has not means it waits for something it need
 * not (without it, a client that never decides would fail only by timeout).
 */
async function cancelUnheard(
  { proxy, call, heard, heardUntil, lostAnswer, lose }: Scene,
  { by = (call: Invocation) => void call.cancel(), decidedAfter }: { by?: (call: Invocation) => void; decidedAfter?: number } = {},
): Promise<{ outcome: CancelOutcome; reconnects: number; heardBefore: string[] }> {
  await lostAnswer;
  let reconnects = 0;
  call.on("reconnecting", () => reconnects++);
  let heardBefore: string[] = [];
  const outcome = new Promise<CancelOutcome>((resolve) => {
    const report = (result: CancelOutcome): void => {
      heardBefore = heard.map((message) => message.type);
      resolve(result);
    };
    call.on("cancelDelivered", () => report({ kind: "delivered" }));
    call.on("cancelUndelivered", ({ error }) => report({ kind: "undelivered", error }));
  });
  let settled = false;
  void outcome.then(() => (settled = true));
  by(call);
  // The caller's outcome is immediate.
  await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  await expect(call.result).rejects.toMatchObject({ kind: "aborted" });
  await expect(call.accepted).rejects.toMatchObject({ kind: "aborted" });
  // The start was sent and may be running: nothing can be delivered while its answer is unknown.
  expect(settled, "cancel reported while the start's outcome was unknown").toBe(false);
  expect(proxy.connections).toHaveLength(1);
  lose();
  // Once the cancellations are sent the client closes the retry's connection, and the server's
  // close frame confirms them: the report follows that close. Waiting for more messages too makes
  // a client that waits for something it need not fail here rather than hang.
  await Promise.race([outcome, ...(decidedAfter === undefined ? [] : [heardUntil(() => heard.length > decidedAfter)])]);
  expect(settled, "the client heard more without reporting the cancel").toBe(true);
  const result = await outcome;
  // Calling cancel() again is the same cancel: it reports the same outcome.
  expect(await call.cancel()).toEqual(result);
  await proxy.idle();
  return { outcome: result, reconnects, heardBefore };
}

/** The connections: the muted one carried only the start; the second began with exactly that start. */
function replayedStart(proxy: MutingProxy): { start: InvocationStart; muted: ProxiedConnection; retry: ProxiedConnection } {
  expect(proxy.connections).toHaveLength(2);
  const [muted, retry] = proxy.connections as [ProxiedConnection, ProxiedConnection];
  const start = muted.sent[0];
  if (start?.type !== "invocationStart") throw new Error("the first connection did not carry a start");
  expect(muted.sent).toEqual([start]);
  // Protocol 9: after an uncertain outcome, the exact descriptor with the same attempt id.
  expect(retry.sent[0]).toEqual(start);
  return { start, muted, retry };
}

/**
 * The accepted case on the wire: the retry got the committed acceptance
 * again (same attempt, same session), and the client sent nothing after the
 * start but one `streamCancel` `cancelled` for each channel the server mapped
 * on that connection — no input item, no other reason.
 */
function cancelledEveryStream(proxy: MutingProxy): { start: InvocationStart; accepted: InvocationAccepted } {
  const { start, muted, retry } = replayedStart(proxy);
  const accepted = muted.answered[0];
  if (accepted?.type !== "invocationAccepted") throw new Error("the server did not accept the start");
  expect(retry.answered[0]).toMatchObject({ type: "invocationAccepted", attemptId: start.attemptId, sessionToken: accepted.sessionToken });
  const mapped = [...new Set(retry.answered.flatMap((message) => ("mappings" in message ? message.mappings : [])).map((m) => m.channel))];
  expect(mapped.length).toBeGreaterThan(0);
  const cancels = retry.sent.slice(1);
  expect([...cancels].sort((a, b) => channelOf(a) - channelOf(b))).toEqual(
    mapped.sort((a, b) => a - b).map((channel) => ({ type: "streamCancel", channel, reason: "cancelled" })),
  );
  return { start, accepted };
}

const channelOf = (message: { readonly type: string }): number =>
  "channel" in message && typeof message.channel === "number" ? message.channel : -1;

/**
 * A second client takes over the session the server accepted first — its
 * token as the proxy kept it from the muted connection — directly, recording
 * what the server sends it.
 */
function takeOver(start: InvocationStart, accepted: InvocationAccepted): { second: Invocation; received: ServerMessage[] } {
  const state: ResumeState = {
    sessionToken: accepted.sessionToken,
    outputCursors: [],
    selector: start.selector,
    idempotencyKey: accepted.idempotencyKey,
  };
  const { transport, received } = recording();
  return { second: createClient({ url: server.url, token: TOKEN, transport }).takeover(state), received };
}

const counting = (): InvokeOptions => ({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(1)) });

describe("a cancel whose start the server accepted, the acceptance lost on the way", () => {
  it("count: the exact start is retried, its output cancelled; on the server the stream ends cancelled and the invocation finishes", async () => {
    await unheardStart(counting(), async (scene) => {
      const { outcome, reconnects, heardBefore } = await cancelUnheard(scene, { decidedAfter: 2 });
      expect(outcome).toEqual({ kind: "delivered" });
      expect(reconnects).toBe(1);
      // Detached once the cancel was sent, at the replayed result — not waiting for any terminal.
      expect(heardBefore).toEqual(["invocationAccepted", "invocationResult"]);
      const { start, accepted } = cancelledEveryStream(scene.proxy);

      const { second } = takeOver(start, accepted);
      expect(await endOf((await firstStream(second)).values())).toMatchObject({ kind: "stream-cancelled", reason: "cancelled" });
      expect(await second.finished).toEqual({ kind: "success" });
    });
  });

  it("count, cancelled by the caller's signal: the same", async () => {
    const controller = new AbortController();
    await unheardStart({ ...counting(), signal: controller.signal }, async (scene) => {
      const { outcome, heardBefore } = await cancelUnheard(scene, { by: () => controller.abort(), decidedAfter: 2 });
      expect(outcome).toEqual({ kind: "delivered" });
      // Detached once the cancel was sent, at the replayed result — not waiting for any terminal.
      expect(heardBefore).toEqual(["invocationAccepted", "invocationResult"]);
      const { start, accepted } = cancelledEveryStream(scene.proxy);

      const { second } = takeOver(start, accepted);
      expect(await endOf((await firstStream(second)).values())).toMatchObject({ kind: "stream-cancelled", reason: "cancelled" });
      expect(await second.finished).toEqual({ kind: "success" });
    });
  });

  it("reverse: the input is terminal on the server with nothing sent on it, the output ends, the invocation finishes", async () => {
    const input = inputStream.strings(openSource(["abc", "def"]));
    await unheardStart({ ...demo, method: "reverse", methodParameters: record(input) }, async (scene) => {
      const { outcome, heardBefore } = await cancelUnheard(scene, { decidedAfter: 2 });
      expect(outcome).toEqual({ kind: "delivered" });
      // Detached once the cancel was sent, at the replayed result — not waiting for any terminal.
      expect(heardBefore).toEqual(["invocationAccepted", "invocationResult"]);
      const { start, accepted } = cancelledEveryStream(scene.proxy);

      const { second, received } = takeOver(start, accepted);
      // The agent's output ends either way: cancelled by the client, or failed because its input was.
      const ended = await (await firstStream(second)).ended;
      expect(["cancelled", "error"]).toContain(ended.kind);
      expect(acceptanceInputs(received)).toEqual([expect.objectContaining({ inputHighWater: { sequence: 0n, terminal: true } })]);
      await second.finished.catch(() => undefined);
      expect(received.at(-1)?.type).toBe("invocationFinished");
    });
  });

  it("digest: the u8 input is terminal on the server; with no result the delivery lasts until the invocation finishes", async () => {
    const chunks = Array.from({ length: 4 }, (_, i) => new Uint8Array(1000).fill(i));
    await unheardStart({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(openSource(chunks))) }, async (scene) => {
      const { outcome, heardBefore } = await cancelUnheard(scene);
      expect(outcome).toEqual({ kind: "delivered" });
      // No result, so no output stream known yet: the client stayed until the invocation was over.
      expect(heardBefore.at(-1)).toBe("invocationFinished");
      const { start, accepted } = cancelledEveryStream(scene.proxy);

      const { second, received } = takeOver(start, accepted);
      await second.finished.catch(() => undefined);
      expect(acceptanceInputs(received)).toEqual([expect.objectContaining({ inputHighWater: { sequence: 0n, terminal: true } })]);
      expect(received.at(-1)?.type).toBe("invocationFinished");
    });
  });
});

describe("a cancel whose start the server rejected, the rejection lost on the way", () => {
  it("the exact start is retried once, rejected again, and that settles it: delivered, no further attempt", async () => {
    await unheardStart({ ...counting(), agentType: "no-such-agent" }, async (scene) => {
      expect(await scene.lostAnswer).toMatchObject({ type: "invocationRejected", code: "not-found", retryable: false });
      const { outcome, reconnects, heardBefore } = await cancelUnheard(scene);
      expect(outcome).toEqual({ kind: "delivered" });
      expect(heardBefore).toEqual(["invocationRejected"]);
      // One reconnect (after the reset), one retry that carried only the start, and nothing after it.
      expect(reconnects).toBe(1);
      const { start, retry } = replayedStart(scene.proxy);
      expect(retry.sent).toEqual([start]);
      expect(retry.answered).toEqual([expect.objectContaining({ type: "invocationRejected", code: "not-found" })]);
    });
  });
});
