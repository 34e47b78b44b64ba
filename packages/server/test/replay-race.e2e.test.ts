/**
 * An exact replay that arrives while the attach it
 * replays has committed but not yet taken the session in memory. A store
 * wrapper holds the commit's answer back at a gate, which forces the
 * interleaving that load made rare: the replay reads the committed attempt
 * before the runtime has acted on it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { inspectToken, Keyring } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, createSessionServer, type SessionStore } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { RawClient, TOKEN, demoStart, startTestServer, v, resumeAttach } from "./helpers.js";

/** A store whose `attach` and `createSession` answers wait for the test once armed. */
class GatedStore extends MemorySessionStore {
  #armed: "attach" | "createSession" | undefined;
  #open: () => void = () => undefined;
  #gate: Promise<void> = Promise.resolve();
  committed: Promise<void> = Promise.resolve();
  #markCommitted: () => void = () => undefined;

  arm(operation: "attach" | "createSession"): () => void {
    this.#armed = operation;
    this.#gate = new Promise((resolve) => (this.#open = resolve));
    this.committed = new Promise((resolve) => (this.#markCommitted = resolve));
    return () => this.#open();
  }

  async #held<T>(operation: "attach" | "createSession", commit: () => Promise<T>): Promise<T> {
    const result = await commit();
    if (this.#armed === operation) {
      this.#armed = undefined;
      this.#markCommitted();
      await this.#gate;
    }
    return result;
  }

  override attach(...args: Parameters<SessionStore["attach"]>): ReturnType<SessionStore["attach"]> {
    return this.#held("attach", () => super.attach(...args));
  }

  override createSession(...args: Parameters<SessionStore["createSession"]>): ReturnType<SessionStore["createSession"]> {
    return this.#held("createSession", () => super.createSession(...args));
  }
}

let dispose: (() => Promise<void>) | undefined;
afterEach(async () => {
  await dispose?.();
  dispose = undefined;
});

async function gatedServer(): Promise<{ url: string; store: GatedStore }> {
  const store = new GatedStore();
  const server = createSessionServer({
    store,
    host: createDemoHost(),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
  });
  const { url } = await server.listen();
  dispose = () => server.close();
  return { url, store };
}

function generationOf(sessionToken: string): bigint {
  return (inspectToken(sessionToken).fields as { generation: bigint }).generation;
}

/** Gives the server `ms` to answer while the gate is shut (the faulty runtime answered at once). */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe("an exact replay racing the attach it replays", () => {
  it("a resume replayed while its commit's answer is held gets the new generation's token and stays the owner", async () => {
    const { url, store } = await gatedServer();
    const first = await RawClient.connect(url);
    first.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await first.nextOf("invocationAccepted");
    first.terminate();
    await first.closed;

    const release = store.arm("attach");
    const resume = resumeAttach("resume", accepted.sessionToken);
    const uncertain = await RawClient.connect(url);
    uncertain.send(resume);
    await store.committed;
    // The outcome is uncertain to the client: it cuts and replays the exact descriptor.
    uncertain.terminate();
    await uncertain.closed;
    const replay = await RawClient.connect(url);
    replay.send(resume);
    await pause(200);
    release();
    const answer = await replay.next();

    expect(answer).toMatchObject({ type: "invocationAccepted", attemptId: resume.attemptId });
    const token = (answer as Extract<ServerMessage, { type: "invocationAccepted" }>).sessionToken;
    expect(generationOf(token)).toBe(2n);
    // Sole owner: the session goes on through this transport.
    const channel = (answer as Extract<ServerMessage, { type: "invocationAccepted" }>).mappings[0]!.channel;
    replay.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("abc") });
    replay.send({ type: "inputStreamEnd", channel, sequence: 1n });
    const { messages, closed } = await replay.all();
    expect(messages.some((m) => m.type === "attachmentRevoked")).toBe(false);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);

    // And the token it holds is current: a later resume with it is not superseded.
    const later = await RawClient.connect(url);
    later.send({ ...resume, attemptId: randomUUID(), sessionToken: token });
    expect(await later.next()).toMatchObject({ type: "invocationAccepted" });
    later.close();
  });

  it("a start replayed while its creation's answer is held joins the same invocation instead of failing it as interrupted", async () => {
    const { url, store } = await gatedServer();
    const release = store.arm("createSession");
    const start = demoStart("count", v.record(v.u32(3), v.u32(0)));
    const uncertain = await RawClient.connect(url);
    uncertain.send(start);
    await store.committed;
    uncertain.terminate();
    await uncertain.closed;
    const replay = await RawClient.connect(url);
    replay.send(start);
    await pause(200);
    release();
    const answer = await replay.next();
    expect(answer).toMatchObject({ type: "invocationAccepted", attemptId: start.attemptId });
    expect(generationOf((answer as Extract<ServerMessage, { type: "invocationAccepted" }>).sessionToken)).toBe(1n);
    const { messages } = await replay.all();
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    const items = messages.filter((m) => m.type === "outputStreamItem").map((m) => (m as { value: { value: number } }).value.value);
    expect(items).toEqual([0, 1, 2]);
  });
});

describe("cut-and-replay under concurrency (stress)", () => {
  /** Sessions per wave and waves: 4 × 150 = 600 cut-and-replay sessions on the SQLite store. */
  const WAVES = 4;
  const PER_WAVE = 150;

  it(`${WAVES * PER_WAVE} resumes cut right after sending and replayed at once: every replay holds the current generation`, async () => {
    const server = await startTestServer();
    dispose = () => server.dispose();
    const failures: string[] = [];
    // Finished sessions: each attachment's end evicts the session from memory,
    // so the replay may load it anew while the resume it replays is in flight.
    const oneSession = async (): Promise<void> => {
      const first = await RawClient.connect(server.url);
      first.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
      const accepted = await first.nextOf("invocationAccepted");
      await first.all();
      const resume = resumeAttach("resume", accepted.sessionToken);
      const [uncertain, refused, replay] = await Promise.all([0, 1, 2].map(() => RawClient.connect(server.url)));
      uncertain!.send(resume);
      // Cut as soon as the message is on its way; replay on a new connection,
      // beside a refused attempt on the same session (a refusal evicts an idle session).
      uncertain!.terminate();
      refused!.send({ ...resume, attemptId: randomUUID(), operation: "takeover", outputCursors: [accepted.sessionToken] });
      replay!.send(resume);
      const { messages } = await replay!.all();
      const answer = messages[0];
      if (answer?.type !== "invocationAccepted") {
        failures.push(`replay answered ${answer?.type}`);
        return;
      }
      if (generationOf(answer.sessionToken) !== 2n) failures.push(`replay token of generation ${generationOf(answer.sessionToken)}`);
      if (messages.some((m) => m.type === "attachmentRevoked")) failures.push("replay revoked");
      if (messages.at(-1)?.type !== "invocationFinished") failures.push(`ended with ${messages.at(-1)?.type}`);
    };
    for (let wave = 0; wave < WAVES; wave++) {
      await Promise.all(Array.from({ length: PER_WAVE }, oneSession));
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
