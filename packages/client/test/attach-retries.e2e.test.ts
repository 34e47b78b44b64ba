/**
 * Which operation a new attach uses (protocol 9, decisions §8: `resume` requires the session
 * token of the current generation, a stale one is `superseded`; `takeover` accepts a token of any
 * generation). Over real WebSockets on loopback, against a scripted server that answers a
 * `resume` carrying the old generation's token with `superseded`, as the real one does.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ClientMessage, ResumeAttach } from "@golem-stream/wire";
import { createClient, type ResumeState } from "../src/index.js";
import { echo } from "./support/fixtures.js";
import { startFakeServer, type FakePeer, type FakeServer } from "./support/fake-session-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const OLD_GENERATION = "session-token-generation-1";
const CURRENT = "session-token-generation-3";
const state: ResumeState = { sessionToken: OLD_GENERATION, outputCursors: [], selector: { ...echo, method: "count" }, idempotencyKey: "k" };
const quick = { initialDelayMs: 1, maxDelayMs: 1, random: () => 0, maxAttempts: 5 };

async function nextAttach(peer: FakePeer): Promise<ResumeAttach> {
  const message: ClientMessage = await peer.next();
  if (message.type !== "resumeAttach") throw new Error(`expected a resumeAttach, got ${message.type}`);
  return message;
}

/** The server's part: a `resume` with the old generation's token is superseded, everything else as `answer` says. */
function superseding(answer: (peer: FakePeer, attach: ResumeAttach) => void) {
  return async (peer: FakePeer): Promise<void> => {
    const attach = await nextAttach(peer);
    if (attach.operation === "resume" && attach.sessionToken === OLD_GENERATION) {
      peer.send({
        type: "invocationRejected",
        attemptId: attach.attemptId,
        code: "superseded",
        message: "stale generation",
        retryable: false,
      });
      return;
    }
    answer(peer, attach);
  };
}

const accept = (peer: FakePeer, attach: ResumeAttach): void =>
  peer.send({ type: "invocationAccepted", attemptId: attach.attemptId, idempotencyKey: "k", mappings: [], sessionToken: CURRENT });

describe("a takeover stays a takeover until one is accepted", () => {
  it("after a retryable rejection (overloaded) the new attempt is a takeover with a fresh attempt id, not a resume", async () => {
    server = await startFakeServer(
      superseding((peer, attach) => {
        if (peer.index === 1) {
          peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "overloaded", message: "busy", retryable: true });
          return;
        }
        accept(peer, attach);
      }),
    );
    const call = createClient({ url: server.url, token: "t", reconnect: quick }).takeover(state);
    call.finished.catch(() => undefined);
    await expect(call.accepted).resolves.toMatchObject({ operation: "takeover" });
    const [first, second] = server.peers.map((peer) => peer.received[0] as ResumeAttach);
    expect([first!.operation, second!.operation]).toEqual(["takeover", "takeover"]);
    expect(second!.sessionToken).toBe(OLD_GENERATION);
    expect(second!.attemptId).not.toBe(first!.attemptId);
    call.detach();
  });

  it("a saved resume retried exactly and rejected retryably is followed by the takeover the caller asked for", async () => {
    const pending: ResumeAttach = {
      type: "resumeAttach",
      attemptId: "6f1c1a43-3c55-4a53-9d0b-1d0c7b2f4e11",
      operation: "resume",
      outputCursors: [],
      sessionToken: "session-token-generation-2",
    };
    server = await startFakeServer(
      superseding((peer, attach) => {
        if (peer.index === 1) {
          peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "internal-error", message: "again", retryable: true });
          return;
        }
        accept(peer, attach);
      }),
    );
    const call = createClient({ url: server.url, token: "t", reconnect: quick }).takeover({ ...state, pendingOperation: pending });
    call.finished.catch(() => undefined);
    await expect(call.accepted).resolves.toMatchObject({ operation: "takeover" });
    expect(server.peers.map((peer) => (peer.received[0] as ResumeAttach).operation)).toEqual(["resume", "takeover"]);
    call.detach();
  });

  it("once a takeover was accepted, a lost connection is followed by a resume with the token it returned", async () => {
    server = await startFakeServer(
      superseding((peer, attach) => {
        accept(peer, attach);
        if (peer.index === 1) peer.close(1011);
      }),
    );
    const call = createClient({ url: server.url, token: "t", reconnect: quick }).takeover(state);
    call.finished.catch(() => undefined);
    const resumed = new Promise<void>((resolve) => call.on("accepted", (event) => event.operation === "resume" && resolve()));
    await resumed;
    const second = server.peers[1]!.received[0] as ResumeAttach;
    expect(second).toMatchObject({ operation: "resume", sessionToken: CURRENT });
    call.detach();
  });
});

describe("an attachmentRevoked is protocol 6.1's replay case only when it answers the replayed acceptance at once", () => {
  /**
   * A start whose first send is lost (an uncertain outcome: the exact start again), accepted on its
   * second; then `after`. A resume is accepted when the session's current token is this
   * connection's (`resume: "accepted"`), else refused superseded, as another owner's would be.
   */
  async function acceptedOnTheSecondSend(after: (peer: FakePeer) => void | Promise<void>, resume: "accepted" | "superseded") {
    server = await startFakeServer(async (peer) => {
      const message = await peer.next();
      if (peer.index === 1) return peer.close(1011);
      if (message.type === "resumeAttach") {
        if (resume === "accepted") {
          peer.send({ type: "invocationAccepted", attemptId: message.attemptId, idempotencyKey: "k", mappings: [], sessionToken: CURRENT });
        } else {
          peer.send({ type: "invocationRejected", attemptId: message.attemptId, code: "superseded", message: "stale", retryable: false });
        }
        return;
      }
      if (message.type !== "invocationStart") throw new Error(`expected a start, got ${message.type}`);
      peer.send({ type: "invocationAccepted", attemptId: message.attemptId, idempotencyKey: "k", mappings: [], sessionToken: CURRENT });
      await after(peer);
    });
    const call = createClient({ url: server.url, token: "t", reconnect: quick }).invoke({
      ...echo,
      method: "count",
      methodParameters: { kind: "record", value: { fields: [] } },
      idempotencyKey: "k",
    });
    call.finished.catch(() => undefined);
    const revoked = new Promise<void>((resolve) => call.on("revoked", () => resolve()));
    return { call, revoked };
  }

  it("revoked later, after the attachment carried the result: another process took over, the call ends revoked", async () => {
    const { call, revoked } = await acceptedOnTheSecondSend((peer) => {
      peer.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
      peer.send({ type: "attachmentRevoked", reason: "replaced" });
    }, "superseded");
    await revoked;
    await expect(call.finished).rejects.toMatchObject({ kind: "revoked" });
    // No resume, which would have been refused superseded: the new owner holds the generation.
    expect(server!.peers).toHaveLength(2);
  });

  it("revoked later with nothing between (a quiet invocation): the resume is refused superseded, and the call ends revoked", async () => {
    let acceptedHere!: () => void;
    const accepted = new Promise<void>((resolve) => (acceptedHere = resolve));
    const { call, revoked } = await acceptedOnTheSecondSend(async (peer) => {
      // Later: once the client has taken the acceptance in, another process takes the session over.
      await accepted;
      peer.send({ type: "attachmentRevoked", reason: "replaced" });
    }, "superseded");
    await call.accepted;
    acceptedHere();
    await revoked;
    const error = await call.finished.catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "revoked", code: undefined, cause: { code: "superseded" } });
    // One resume tried whether this process still held the session: it did not.
    expect(server!.peers.map((peer) => peer.received[0]?.type)).toEqual(["invocationStart", "invocationStart", "resumeAttach"]);
  });

  it("revoked right after the replayed acceptance: its attachment had detached, and a fresh resume follows", async () => {
    const { call } = await acceptedOnTheSecondSend((peer) => peer.send({ type: "attachmentRevoked", reason: "replaced" }), "accepted");
    const resumed = new Promise<void>((resolve) => call.on("accepted", (event) => event.operation === "resume" && resolve()));
    await resumed;
    const resume = server!.peers[2]!.received[0] as ResumeAttach;
    expect(resume).toMatchObject({ type: "resumeAttach", operation: "resume", sessionToken: CURRENT });
    call.detach();
  });
});
