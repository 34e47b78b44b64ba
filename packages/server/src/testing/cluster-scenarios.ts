/**
 * Cluster mode as a test suite any `ClusterSessionStore` can run: nodes are
 * `createSessionServer`s, each on its own port, over stores of one shared
 * backend (the caller's `openStores`); a client attaches, resumes and takes
 * over at any node while the node that accepted the start runs the agent.
 * This package runs it on `MemoryCluster`, @golem-stream/store-postgres on
 * PostgreSQL. The caller passes in vitest's `describe`/`it`/`expect`.
 *
 *   clusterScenarios({ describe, it, expect, afterEach }, "my cluster", (count) => openMyStores(count));
 */
import { createHash, randomUUID } from "node:crypto";
import type { afterEach as AfterEach } from "vitest";
import { inspectToken, Keyring } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import { createDemoHost } from "../demo/host.js";
import { createSessionServer, type SessionServer } from "../server.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { Logger, ServerLimits } from "../options.js";
import { demoStart, outputValues, v } from "./demo-messages.js";
import { RawClient, TEST_TOKEN as TOKEN } from "./raw-client.js";
import { Pauses } from "./pauses.js";
import type { TestApi } from "./store-contract.js";

type Accepted = Extract<ServerMessage, { type: "invocationAccepted" }>;

interface Node {
  readonly id: string;
  readonly server: SessionServer;
  readonly url: string;
}

export interface ClusterTestApi extends TestApi {
  readonly afterEach: typeof AfterEach;
}

/** Opens `count` node stores (node ids of the caller's choice) on one fresh shared backend. */
export type OpenClusterStores = (count: number) => Promise<ClusterSessionStore[]>;

/** `store` with some methods replaced (a replacement calls the original on `store` itself); the rest pass through. */
function intercepting(store: ClusterSessionStore, replacements: Partial<ClusterSessionStore>): ClusterSessionStore {
  return new Proxy(store, {
    get(target, name) {
      const replacement = (replacements as Record<PropertyKey, unknown>)[name];
      if (replacement !== undefined) return replacement;
      const value = Reflect.get(target, name) as unknown;
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Every client's `all()` gives up once the server has sent nothing for 20 s,
 * with a list of what it received: a hang then names the stream that
 * stopped instead of only timing out. The bound is on silence, not on the
 * total: a scenario that moves hundreds of megabytes through a database on
 * a loaded machine keeps going as long as it makes progress.
 */
const UNTIL_SILENT = { idleMs: 20_000 } as const;

/** How a scenario's nodes differ from the defaults. */
interface ClusterSetup {
  /** Default 10 000. */
  readonly leaseTtlMs?: number;
  readonly wrap?: (index: number, store: ClusterSessionStore) => ClusterSessionStore;
  readonly logger?: (index: number) => Logger;
  readonly limits?: Partial<ServerLimits>;
  /** Told of every node's backpressure pauses. */
  readonly pauses?: Pauses;
}

export function clusterScenarios(api: ClusterTestApi, name: string, openStores: OpenClusterStores): void {
  const { describe, it, expect, afterEach } = api;
  let nodes: Node[] = [];
  let opened: ClusterSessionStore[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((node) => node.server.close()));
    await Promise.all(opened.map((store) => store.close()));
    nodes = [];
    opened = [];
  });

  /** `count` nodes on one backend; `wrap` may stand in front of a node's store (index 0 is node A). */
  async function startCluster(
    count: number,
    { leaseTtlMs = 10_000, wrap = (_, store) => store, logger, limits, pauses }: ClusterSetup = {},
  ): Promise<{ stores: ClusterSessionStore[]; nodes: Node[] }> {
    const stores = await openStores(count);
    opened.push(...stores);
    const keyring = Keyring.generate("k1");
    for (const [index, store] of stores.entries()) {
      const server = createSessionServer({
        store: wrap(index, store),
        host: createDemoHost(),
        keyring,
        authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
        cluster: { leaseTtlMs },
        ...(logger === undefined ? {} : { logger: logger(index) }),
        ...(limits === undefined ? {} : { limits }),
        ...(pauses === undefined ? {} : { observers: [pauses.observer] }),
      });
      const { url } = await server.listen();
      nodes.push({ id: store.nodeId, server, url });
    }
    return { stores, nodes };
  }

  function resume(operation: "resume" | "takeover", sessionToken: string, outputCursors: string[] = []) {
    return { type: "resumeAttach" as const, attemptId: randomUUID(), operation, outputCursors, sessionToken };
  }

  /** Starts at `owner` (which then runs the agent), drops that connection, and resumes at `at`. */
  async function startThenResume(owner: Node, at: Node, start: ReturnType<typeof demoStart>): Promise<{ accepted: Accepted; client: RawClient }> {
    const first = await RawClient.connect(owner.url);
    first.send(start);
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    first.terminate();
    const client = await RawClient.connect(at.url);
    client.send(resume("resume", accepted.sessionToken));
    return { accepted, client };
  }

  describe(name, () => {
    it("detachedSessionTimeoutMs: a client attached at another node than the owner keeps the session, even with nothing flowing; once it leaves, the owner gives the session up", async () => {
      // Long enough that the serving node's `alive` changes (a quarter of it apart) reach the owner
      // through a loaded database in time; the test waits three timeouts.
      const TIMEOUT_MS = 1500;
      const givenUp: string[] = [];
      const waiters: (() => void)[] = [];
      const logger = (index: number): Logger => {
        const note = (_message: string, fields?: Readonly<Record<string, unknown>>): void => {
          if (fields?.["event"] !== "session.given-up") return;
          givenUp.push(String.fromCharCode(97 + index));
          for (const wake of waiters.splice(0)) wake();
        };
        return { info: note, warn: note, error: note };
      };
      const [a, b] = (await startCluster(2, { logger, limits: { detachedSessionTimeoutMs: TIMEOUT_MS } })).nodes;
      // reverse with its input open and nothing sent: only B's word tells A that the client is there.
      const { client } = await startThenResume(a!, b!, demoStart("reverse", v.record(v.stream(randomUUID()))));
      const reaccepted = (await client.nextOf("invocationAccepted")) as Accepted;
      await sleep(3 * TIMEOUT_MS);
      expect(givenUp).toEqual([]);
      const input = reaccepted.mappings.find((m) => m.direction === "input")!;
      client.send({ type: "inputStreamItem", channel: input.channel, sequence: 0n, value: v.str("abc") });
      for (;;) {
        const message = await client.next();
        if (message.type === "outputStreamItem") {
          expect(message.value).toEqual(v.str("cba"));
          break;
        }
      }

      const given = new Promise<void>((resolve) => waiters.push(resolve));
      client.terminate();
      await given;
      expect(givenUp).toEqual(["a"]);
      const back = await RawClient.connect(b!.url);
      back.send(resume("resume", reaccepted.sessionToken));
      const { messages } = await back.all(UNTIL_SILENT);
      expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({ outcome: { kind: "cancelled", reason: "transport-detached" } });
    }, 30_000);

    it("reverse: items sent at node A, the connection cut, the rest sent at node B; every output in order, no gap", async () => {
      const [a, b] = (await startCluster(2)).nodes;
      const first = await RawClient.connect(a!.url);
      first.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
      const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
      const input = accepted.mappings[0]!.channel;
      first.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("abc") });
      first.send({ type: "inputStreamItem", channel: input, sequence: 1n, value: v.str("def") });
      const result = await first.nextOf("invocationResult");
      const output = result.mappings[0]!.channel;
      let cursor = "";
      for (let seen = 0; seen < 2; ) {
        const message = await first.next();
        if (message.type === "outputStreamItem" && message.channel === output) {
          seen++;
          cursor = message.cursorToken;
        }
      }
      first.terminate();

      const second = await RawClient.connect(b!.url);
      second.send(resume("resume", accepted.sessionToken, [cursor]));
      const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
      const inputMapping = reaccepted.mappings.find((m) => m.direction === "input")!;
      expect(inputMapping.inputHighWater).toEqual({ sequence: 2n, terminal: false });
      second.send({ type: "inputStreamItem", channel: inputMapping.channel, sequence: 2n, value: v.str("ghi") });
      second.send({ type: "inputStreamEnd", channel: inputMapping.channel, sequence: 3n });
      const { messages, closed } = await second.all(UNTIL_SILENT);
      const reResult = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      expect(outputValues(messages, reResult.mappings[0]?.channel ?? reaccepted.mappings.find((m) => m.direction === "output")!.channel)).toEqual([v.str("ihg")]);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
      expect(closed.code).toBe(1000);
    });

    it("the client comes back to the owner while it still feeds its agent what B committed: the agent gets every item once, in order", async () => {
      // Seen in methods-under-cuts as a short digest: A accepted the resent
      // items directly while its feed of B's items from the store was behind,
      // handed them to the agent first, and the feed then skipped B's items.
      let feedHeld = true;
      let releaseFeed!: () => void;
      const feedReleased = new Promise<void>((resolve) => (releaseFeed = resolve));
      const slowFeedAtA = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
        index !== 0
          ? store
          : intercepting(store, {
              // A reads B's items back only after it has taken the client's next item itself.
              readInput: async (...args) => {
                if (feedHeld) await feedReleased;
                return store.readInput(...args);
              },
              acceptInput: (chunk, introduced) => {
                const accepted = store.acceptInput(chunk, introduced);
                if (chunk.sequence >= 6n) setTimeout(releaseFeed, 50);
                return accepted;
              },
            });
      const [a, b] = (await startCluster(2, { wrap: slowFeedAtA })).nodes;
      const texts = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg", "hhhhhhhh"];
      const send = async (client: RawClient, channel: number, from: number, to: number): Promise<void> => {
        for (let i = from; i < to; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(texts[i]!) });
        await client.waitFor((m) => m.type === "inputStreamAck" && m.channel === channel && m.highestContiguousSequence >= BigInt(to - 1));
      };
      const first = await RawClient.connect(a!.url);
      first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
      const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
      await send(first, accepted.mappings[0]!.channel, 0, 3);
      first.terminate();

      const atB = await RawClient.connect(b!.url);
      atB.send(resume("resume", accepted.sessionToken));
      const acceptedAtB = (await atB.nextOf("invocationAccepted")) as Accepted;
      await send(atB, acceptedAtB.mappings[0]!.channel, 3, 6);
      atB.terminate();

      const again = await RawClient.connect(a!.url);
      again.send(resume("resume", acceptedAtB.sessionToken));
      const mapping = ((await again.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
      expect(mapping.inputHighWater).toEqual({ sequence: 6n, terminal: false });
      for (let i = 6; i < texts.length; i++) again.send({ type: "inputStreamItem", channel: mapping.channel, sequence: BigInt(i), value: v.str(texts[i]!) });
      again.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(texts.length) });
      const { messages } = await again.all(UNTIL_SILENT);
      feedHeld = false;
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
      expect(fields.map((field) => field.value)).toEqual([String(texts.length), String(texts.join("").length)]);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("digest: half the bytes uploaded at A, the rest from the high-water at B; the digest is of every byte once", async () => {
      const [a, b] = (await startCluster(2)).nodes;
      const data = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => (i * 31) & 0xff);
      const first = await RawClient.connect(a!.url);
      first.send(demoStart("digest", v.record(v.stream(randomUUID()))));
      const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
      const channel = accepted.mappings[0]!.channel;
      const half = 1024 * 1024 + 5;
      first.send({ type: "input-u8", channel, sequence: 0n, payload: data.subarray(0, 1024 * 1024) });
      first.send({ type: "input-u8", channel, sequence: 1048576n, payload: data.subarray(1024 * 1024, half) });
      await first.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(half));
      first.terminate();

      const second = await RawClient.connect(b!.url);
      second.send(resume("resume", accepted.sessionToken));
      const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
      const mapping = reaccepted.mappings[0]!;
      const from = Number(mapping.inputHighWater!.sequence);
      expect(from).toBe(half);
      for (let at = from; at < data.length; at += 1024 * 1024) {
        second.send({ type: "input-u8", channel: mapping.channel, sequence: BigInt(at), payload: data.subarray(at, Math.min(at + 1024 * 1024, data.length)) });
      }
      second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(data.length) });
      const { messages } = await second.all(UNTIL_SILENT);
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
      expect(fields[0]!.value).toBe(String(data.length));
      expect(fields[1]!.value).toBe(createHash("sha256").update(data).digest("hex"));
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("maxStoredBytesPerPrincipal: input past the bound at a node that only mirrors the session is refused there with limit-exceeded, and never stored", async () => {
      const [a, b] = (await startCluster(2, { limits: { maxStoredBytesPerPrincipal: 6 } })).nodes;
      const { client } = await startThenResume(a!, b!, demoStart("digest", v.record(v.stream(randomUUID()))));
      const reaccepted = (await client.nextOf("invocationAccepted")) as Accepted;
      const channel = reaccepted.mappings[0]!.channel;
      client.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array(6).fill(1) });
      await client.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 6n);
      client.send({ type: "input-u8", channel, sequence: 6n, payload: new Uint8Array([2]) });
      const { messages, closed } = await client.all(UNTIL_SILENT);
      expect(messages.at(-1)).toMatchObject({ type: "invocationRejected", code: "limit-exceeded", retryable: false });
      expect(closed.code).toBe(1002);
      // The owner's stream holds the six bytes and nothing after them.
      const back = await RawClient.connect(a!.url);
      back.send(resume("takeover", reaccepted.sessionToken));
      expect(((await back.nextOf("invocationAccepted")) as Accepted).mappings[0]!.inputHighWater).toEqual({ sequence: 6n, terminal: false });
      back.terminate();
    });

    it("input the previous attachment's node commits after the client resumed at another node (its connection cut with commits in flight) is the same input: accepted once, nothing fails", async () => {
      // Node A's commits of input take 150 ms: the client's connection to A is cut while three are in flight.
      const slowInput = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
        index !== 0 ? store : intercepting(store, { acceptInput: (...args) => sleep(150).then(() => store.acceptInput(...args)) });
      const [a, b] = (await startCluster(2, { wrap: slowInput })).nodes;
      const first = await RawClient.connect(a!.url);
      first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
      const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
      const channel = accepted.mappings[0]!.channel;
      for (const [i, text] of ["ab", "cd", "ef"].entries()) first.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(text) });
      await new Promise((resolve) => setTimeout(resolve, 20));
      first.terminate();

      // B reads the high-water before A's commits land; the client resends from it. B commits first,
      // A's commits of the same items are then refused by the store.
      const second = await RawClient.connect(b!.url);
      second.send(resume("resume", accepted.sessionToken));
      const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
      const mapping = reaccepted.mappings[0]!;
      const from = Number(mapping.inputHighWater!.sequence);
      const texts = ["ab", "cd", "ef", "gh"];
      for (let i = from; i < texts.length; i++) second.send({ type: "inputStreamItem", channel: mapping.channel, sequence: BigInt(i), value: v.str(texts[i]!) });
      // The invocation is still running when A's commits land and are refused.
      await second.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(texts.length));
      await new Promise((resolve) => setTimeout(resolve, 250));
      second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(texts.length) });
      const { messages } = await second.all(UNTIL_SILENT);
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
      expect(fields.map((field) => field.value)).toEqual(["4", "8"]);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("the previous node's commits land after the new node read the high-water: the new node's own commits of those items are refused and found identical (also once the input has ended), and its ACKs never go back", async () => {
      // A's commits wait until B first commits; B's commits wait until A's have landed. So B read
      // high-water 0, the client resent from there, and the store refuses B's items 0..2 (A has
      // them) and takes item 3. Checking a refused item reads the store, so it resolves after
      // item 3's commit: the ACKs must still leave in sequence order (this failed the cluster demo),
      // and an identical item is durable even when the check finds the input already ended.
      let openOldGate!: () => void;
      const oldGate = new Promise<void>((resolve) => (openOldGate = resolve));
      let oldLanded!: () => void;
      const landed = new Promise<void>((resolve) => (oldLanded = resolve));
      let landedCount = 0;
      const gated = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
        index === 0
          ? intercepting(store, {
              acceptInput: async (...args) => {
                await oldGate;
                await store.acceptInput(...args);
                if (++landedCount === 3) oldLanded();
              },
            })
          : intercepting(store, {
              acceptInput: async (...args) => {
                openOldGate();
                await landed;
                await store.acceptInput(...args);
              },
              // Reading back takes a while, as on a real database: longer than one turn of the event loop.
              readInput: (...args) => sleep(30).then(() => store.readInput(...args)),
              getStream: (...args) => sleep(30).then(() => store.getStream(...args)),
            });
      const [a, b] = (await startCluster(2, { wrap: gated })).nodes;
      const first = await RawClient.connect(a!.url);
      first.send(demoStart("tally", v.record(v.stream(randomUUID()))));
      const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
      const texts = ["ab", "cd", "ef", "gh"];
      for (let i = 0; i < 3; i++) first.send({ type: "inputStreamItem", channel: accepted.mappings[0]!.channel, sequence: BigInt(i), value: v.str(texts[i]!) });
      await new Promise((resolve) => setTimeout(resolve, 20));
      first.terminate();

      const second = await RawClient.connect(b!.url);
      second.send(resume("resume", accepted.sessionToken));
      const mapping = ((await second.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
      expect(mapping.inputHighWater).toEqual({ sequence: 0n, terminal: false });
      // The end follows at once: it is recorded while the refused items are still being checked.
      for (let i = 0; i < texts.length; i++) second.send({ type: "inputStreamItem", channel: mapping.channel, sequence: BigInt(i), value: v.str(texts[i]!) });
      second.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(texts.length) });
      const { messages } = await second.all(UNTIL_SILENT);
      const acks = messages.flatMap((m) => (m.type === "inputStreamAck" && m.channel === mapping.channel ? [m.highestContiguousSequence] : []));
      expect(acks).toEqual([...acks].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
      expect(acks.at(-1)).toBe(BigInt(texts.length));
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
      expect(fields.map((field) => field.value)).toEqual(["4", "8"]);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("the last input item before the end is refused by the store at B: it is not counted, the end is not recorded short of it, the client resumes and the stream ends with every item", async () => {
      let refuseOnce = true;
      const refusing = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
        index !== 1
          ? store
          : intercepting(store, {
              acceptInput: (...args) => {
                if (args[0].sequence === 2n && refuseOnce) {
                  refuseOnce = false;
                  return Promise.reject(new Error("the write failed"));
                }
                return store.acceptInput(...args);
              },
            });
      const [a, b] = (await startCluster(2, { wrap: refusing })).nodes;
      const { client: atB } = await startThenResume(a!, b!, demoStart("tally", v.record(v.stream(randomUUID()))));
      const atBAccepted = (await atB.nextOf("invocationAccepted")) as Accepted;
      const mapping = atBAccepted.mappings[0]!;
      const texts = ["ab", "cd", "ef"];
      for (let i = 0; i < texts.length; i++) atB.send({ type: "inputStreamItem", channel: mapping.channel, sequence: BigInt(i), value: v.str(texts[i]!) });
      atB.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: BigInt(texts.length) });
      const first = await atB.all(UNTIL_SILENT);
      expect(first.messages.map((m) => m.type)).not.toContain("invocationFinished");
      expect(first.closed.code).not.toBe(1000);

      const atA = await RawClient.connect(a!.url);
      atA.send(resume("resume", atBAccepted.sessionToken));
      const again = ((await atA.nextOf("invocationAccepted")) as Accepted).mappings[0]!;
      expect(again.inputHighWater).toEqual({ sequence: 2n, terminal: false });
      for (let i = 2; i < texts.length; i++) atA.send({ type: "inputStreamItem", channel: again.channel, sequence: BigInt(i), value: v.str(texts[i]!) });
      atA.send({ type: "inputStreamEnd", channel: again.channel, sequence: BigInt(texts.length) });
      const { messages } = await atA.all(UNTIL_SILENT);
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      const fields = (result.result as unknown as { value: { value: { fields: { value: unknown }[] } } }).value.value.fields;
      expect(fields.map((field) => field.value)).toEqual(["3", "6"]);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("an exact replay of a resume at B races the original at A, which commits first: B answers with the replay, not superseded", async () => {
      // B reads the attempt (not there yet), then loads the session, which is slow: meanwhile A
      // commits the same attempt. B then sees a newer generation, and must find the attempt.
      let openGate!: () => void;
      const gate = new Promise<void>((resolve) => (openGate = resolve));
      let loadingAtB!: () => void;
      const bLoading = new Promise<void>((resolve) => (loadingAtB = resolve));
      let armed = false;
      const slowLoadAtB = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
        index !== 1
          ? store
          : intercepting(store, {
              getSession: async (...args) => {
                if (armed) {
                  loadingAtB();
                  await gate;
                }
                return store.getSession(...args);
              },
            });
      const [a, b] = (await startCluster(2, { wrap: slowLoadAtB })).nodes;
      const first = await RawClient.connect(a!.url);
      first.send(demoStart("count", v.record(v.u32(20), v.u32(10))));
      const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
      first.terminate();
      // The client sends its resume to B, loses the connection before the answer, and replays it at A.
      const message = resume("resume", accepted.sessionToken);
      const atB = await RawClient.connect(b!.url);
      armed = true;
      atB.send(message);
      await bLoading;
      const atA = await RawClient.connect(a!.url);
      atA.send(message);
      expect(await atA.nextOf("invocationAccepted")).toMatchObject({ attemptId: message.attemptId });
      openGate();
      expect(await atB.next()).toMatchObject({ type: "invocationAccepted", attemptId: message.attemptId });
      atA.terminate();
      atB.terminate();
    });

    it("count running at A streams live to a client attached at B", async () => {
      const [a, b] = (await startCluster(2)).nodes;
      const { accepted, client: second } = await startThenResume(a!, b!, demoStart("count", v.record(v.u32(40), v.u32(5))));
      const { messages } = await second.all(UNTIL_SILENT);
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      expect(outputValues(messages, result.mappings[0]!.channel).map((item) => item.value)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("an uncertain start replayed exactly at node B joins the invocation A runs; A's transport is revoked", async () => {
      const [a, b] = (await startCluster(2)).nodes;
      const start = demoStart("reverse", v.record(v.stream(randomUUID())));
      const atA = await RawClient.connect(a!.url);
      atA.send(start);
      await atA.nextOf("invocationAccepted");
      const atB = await RawClient.connect(b!.url);
      atB.send(start);
      const replayed = (await atB.nextOf("invocationAccepted")) as Accepted;
      expect(replayed.attemptId).toBe(start.attemptId);
      // The replay's transport is the sole owner of generation 1 (protocol section 9).
      expect((await atA.all(UNTIL_SILENT)).messages.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
      const input = replayed.mappings[0]!;
      expect(input.provisionalRef).toBeDefined();
      atB.send({ type: "inputStreamItem", channel: input.channel, sequence: 0n, value: v.str("xyz") });
      atB.send({ type: "inputStreamEnd", channel: input.channel, sequence: 1n });
      const { messages } = await atB.all(UNTIL_SILENT);
      const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
      expect(outputValues(messages, result.mappings[0]!.channel)).toEqual([v.str("zyx")]);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("groups: nested output streams created at A are announced and delivered at B", async () => {
      const [a, b] = (await startCluster(2)).nodes;
      const { accepted, client: second } = await startThenResume(a!, b!, demoStart("groups", v.record(v.u32(3), v.u32(4))));
      const { messages } = await second.all(UNTIL_SILENT);
      const items = messages.filter((m) => m.type === "outputStreamItem") as Extract<ServerMessage, { type: "outputStreamItem" }>[];
      const children = items.flatMap((item) => item.mappings.map((m) => m.channel));
      expect(children).toHaveLength(3);
      for (const channel of children) expect(outputValues(messages, channel).map((x) => x.value)).toEqual([0, 1, 2, 3]);
      expect(messages.filter((m) => m.type === "outputStreamEnd")).toHaveLength(4);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("groups: B reads items from the log before its sync has learned of the nested streams they introduce; every item still carries its mapping", async () => {
      // The race seen in CI, forced: B loads the session before A commits the
      // items that introduce nested streams, its attachment reads them back
      // after the commit, and the change notifications reach B late.
      let bLoaded!: () => void;
      const loadedAtB = new Promise<void>((resolve) => (bLoaded = resolve));
      let changesHeld = true;
      const held: (() => void)[] = [];
      let appendsAtA = Promise.resolve();
      let resultAtA!: () => void;
      const committedResultAtA = new Promise<void>((resolve) => (resultAtA = resolve));
      let aFinished!: () => void;
      const finishedAtA = new Promise<void>((resolve) => (aFinished = resolve));
      const deliverHeldSoon = (): void => {
        setTimeout(() => {
          changesHeld = false;
          for (const deliver of held.splice(0)) deliver();
        }, 50);
      };
      const racing = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
        index === 0
          ? intercepting(store, {
              // Held until B has loaded the session; later appends queue behind, in call order as the store requires.
              appendOutput: (event, introduced) => {
                const gate = introduced.length > 0 ? loadedAtB : Promise.resolve();
                const appended = appendsAtA.then(() => gate).then(() => store.appendOutput(event, introduced));
                appendsAtA = appended.catch(() => undefined);
                return appended;
              },
              setResult: async (...args) => {
                await store.setResult(...args);
                resultAtA();
              },
              finish: async (...args) => {
                await store.finish(...args);
                aFinished();
              },
            })
          : intercepting(store, {
              subscribe: (sessionId, listener) =>
                store.subscribe(sessionId, (change) => {
                  if (changesHeld) held.push(() => listener(change));
                  else listener(change);
                }),
              // B loads the session with its result (so the attachment starts reading at once), before the items.
              getSession: async (...args) => {
                await committedResultAtA;
                return store.getSession(...args);
              },
              attach: async (...args) => {
                bLoaded();
                await finishedAtA;
                const attached = await store.attach(...args);
                // A pump that knows of no item yet reads nothing (output-pumps.ts): the
                // notifications arrive a moment after the attachment all the same.
                deliverHeldSoon();
                return attached;
              },
              readOutput: async (...args) => {
                const events = await store.readOutput(...args);
                // The attachment has read the log: only now do the notifications arrive.
                deliverHeldSoon();
                return events;
              },
            });
      const [a, b] = (await startCluster(2, { wrap: racing })).nodes;
      const { client: second } = await startThenResume(a!, b!, demoStart("groups", v.record(v.u32(3), v.u32(4))));
      const { messages } = await second.all(UNTIL_SILENT);
      const items = messages.filter((m) => m.type === "outputStreamItem") as Extract<ServerMessage, { type: "outputStreamItem" }>[];
      const groups = items.filter((item) => item.channel === items[0]!.channel);
      expect(groups.map((item) => item.mappings.length)).toEqual([1, 1, 1]);
      for (const channel of groups.flatMap((item) => item.mappings.map((m) => m.channel))) {
        expect(outputValues(messages, channel).map((x) => x.value)).toEqual([0, 1, 2, 3]);
      }
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("a takeover at node C revokes the transport attached at node B", async () => {
      const [a, b, c] = (await startCluster(3)).nodes;
      const { accepted, client: atB } = await startThenResume(a!, b!, demoStart("reverse", v.record(v.stream(randomUUID()))));
      await atB.nextOf("invocationAccepted");
      const atC = await RawClient.connect(c!.url);
      atC.send(resume("takeover", accepted.sessionToken));
      const taken = (await atC.nextOf("invocationAccepted")) as Accepted;
      const { messages } = await atB.all(UNTIL_SILENT);
      expect(messages.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
      // C goes on: end the input, the invocation finishes there.
      const input = taken.mappings.find((m) => m.direction === "input")!;
      atC.send({ type: "inputStreamEnd", channel: input.channel, sequence: 0n });
      expect((await atC.all(UNTIL_SILENT)).messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("a stalled reader at B pauses the producer at A within the session's byte budget; reading again delivers every blob", async () => {
      // A 16 MiB budget and 48 blobs of 1 MiB: three budgets' worth, so a producer that ignored the
      // stalled reader would record them all, while a quarter of the default volume moves through the
      // store (the default 64 MiB and 200 blobs made this the slowest scenario on a loaded machine).
      const budgetMiB = 16;
      const blobCount = 3 * budgetMiB;
      const pauses = new Pauses();
      const { stores, nodes: [a, b] } = await startCluster(2, { limits: { maxQueuedBytesPerSession: budgetMiB * 1024 * 1024 }, pauses });
      const { accepted, client: second } = await startThenResume(a!, b!, demoStart("blobs", v.record(v.u32(blobCount), v.u32(1024 * 1024))));
      const result = await second.nextOf("invocationResult");
      second.socket.pause();
      const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
      // A's producer stops a window ahead of what B has sent (and B sends no more than its socket takes):
      // whenever it waits, what it recorded is within the budget of what B sent.
      pauses.reset();
      await pauses.reached("output-window");
      const count = Number((await stores[0]!.listStreams(sessionId)).find((s) => s.direction === "output")!.count);
      // The budget of unsent output, plus what B's socket and the kernel took (sent, hence released).
      expect(count).toBeLessThan(blobCount);
      expect(count).toBeLessThanOrEqual(budgetMiB + 16);
      second.socket.resume();
      const { messages } = await second.all(UNTIL_SILENT);
      const blobs = messages.filter((m) => m.type === "output-binary" && m.channel === result.mappings[0]!.channel);
      expect(blobs).toHaveLength(blobCount);
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("a client's cancel of an output at B stops the producer at A; the cancelled terminal and the finish reach B", async () => {
      const [a, b] = (await startCluster(2)).nodes;
      const { accepted, client: second } = await startThenResume(a!, b!, demoStart("count", v.record(v.u32(100000), v.u32(1))));
      const result = await second.nextOf("invocationResult");
      const output = result.mappings[0]!.channel;
      await second.waitFor((m) => m.type === "outputStreamItem");
      second.send({ type: "streamCancel", channel: output, reason: "cancelled" });
      const { messages } = await second.all(UNTIL_SILENT);
      expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({ outcome: { kind: "cancelled", reason: "cancelled" } });
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished" });
      expect(outputValues(messages, output).length).toBeLessThan(100000);
    });

    it("the owner's lease lapses (node A stops without a word): another node re-runs a replayable invocation; the client at B gets every item once and success", async () => {
      const { nodes: [a, b] } = await startCluster(2, { leaseTtlMs: 300 });
      const { client: second } = await startThenResume(a!, b!, demoStart("count", v.record(v.u32(40), v.u32(5))));
      const result = await second.nextOf("invocationResult");
      await second.waitFor((m) => m.type === "outputStreamItem");
      // A dies: its invocation stops, nothing more is recorded, its lease is no longer renewed.
      await a!.server.close();
      nodes = nodes.filter((node) => node !== a);
      const { messages } = await second.all(UNTIL_SILENT);
      expect(outputValues(messages, result.mappings[0]!.channel).map((item) => item.value)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("digest: the owner's lease lapses mid-upload; the node that claims it re-runs it over the stored input, and the rest of the upload completes it", async () => {
      const { nodes: [a, b] } = await startCluster(2, { leaseTtlMs: 300 });
      const { client: second } = await startThenResume(a!, b!, demoStart("digest", v.record(v.stream(randomUUID()))));
      const reaccepted = (await second.nextOf("invocationAccepted")) as Accepted;
      const input = reaccepted.mappings.find((m) => m.direction === "input")!.channel;
      const data = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 13) % 251);
      second.send({ type: "input-u8", channel: input, sequence: 0n, payload: data.subarray(0, 100_000) });
      await second.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 100_000n);
      await a!.server.close();
      nodes = nodes.filter((node) => node !== a);
      second.send({ type: "input-u8", channel: input, sequence: 100_000n, payload: data.subarray(100_000) });
      second.send({ type: "inputStreamEnd", channel: input, sequence: 200_000n });
      const { messages } = await second.all(UNTIL_SILENT);
      const result = messages.find((m) => m.type === "invocationResult");
      expect(result).toMatchObject({ result: { value: { value: { fields: [{ value: "200000" }, { value: createHash("sha256").update(data).digest("hex") }] } } } });
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    });

    it("the owner's lease lapses (node A stops without a word) with re-runs off: another node finishes its invocation; the client at B gets terminals and invocation-failed", async () => {
      const { nodes: [a, b] } = await startCluster(2, { leaseTtlMs: 300, limits: { maxReplays: 0 } });
      const { accepted, client: second } = await startThenResume(a!, b!, demoStart("count", v.record(v.u32(100000), v.u32(5))));
      await second.waitFor((m) => m.type === "outputStreamItem");
      // A dies: its invocation stops, nothing more is recorded, its lease is no longer renewed.
      await a!.server.close();
      nodes = nodes.filter((node) => node !== a);
      const { messages } = await second.all(UNTIL_SILENT);
      expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({ outcome: { kind: "cancelled", reason: "invocation-failed" } });
      expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
      // Everything produced before stays replayable.
      const replay = await RawClient.connect(b!.url);
      replay.send(resume("takeover", accepted.sessionToken));
      const again = await replay.all(UNTIL_SILENT);
      expect(outputValues(again.messages, (again.messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>).mappings[0]!.channel)).toEqual(
        outputValues(messages, (messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>).mappings[0]!.channel),
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
      const waiters: (() => void)[] = [];
      const wake = (): void => waiters.splice(0).forEach((w) => w());
      const until = async (condition: () => boolean): Promise<void> => {
        while (!condition()) await new Promise<void>((resolve) => waiters.push(resolve));
      };
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
      const { nodes: [, b], stores } = await startCluster(2, { leaseTtlMs: LEASE_MS, wrap: reachable });
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
      const { nodes: [a, b] } = await startCluster(2, { leaseTtlMs: 300, wrap: stallable, logger: watch });
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
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("A kept running the invocation B had claimed")), 10_000)));
      expect(["session.finished-elsewhere", "session.ownership-lost"]).toContain(await Promise.race([stopped, late]).finally(() => clearTimeout(timer)));
      expect(await a!.server.drain(0)).toBe(0);
      nodes = nodes.filter((node) => node !== a);
    });

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
        state.heldAtA.push(held.then(() => "stored", (error: unknown) => (error as { code?: unknown }).code));
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
          acceptInput: (chunk, introduced, epoch) => (stalled ? heldAtA(() => store.acceptInput(chunk, introduced, epoch)) : store.acceptInput(chunk, introduced, epoch)),
          appendOutput: (event, introduced, epoch) => {
            if (!stalled) return store.appendOutput(event, introduced, epoch).then(() => void (state.committedByA += event.event === "item" ? event.itemCount : 0n));
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
      const { stores, nodes: [a, b] } = await startCluster(2, { leaseTtlMs: 300, wrap, logger, limits });
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
      expect(messages.find((m) => m.type === "outputStreamEnd" && m.channel === channel)).toMatchObject({ outcome: { kind: "cancelled", reason: "invocation-failed" } });
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
      expect(await a.server.drain(0)).toBe(0);
      nodes = nodes.filter((node) => node !== a);
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
      expect(await a.server.drain(0)).toBe(0);
      nodes = nodes.filter((node) => node !== a);
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
      expect(await drained).toBe(0);
      nodes = nodes.filter((node) => node !== a);
    });

    it("drain: a success whose finish is being committed at the deadline stays a success, in the store, for the client and in the drain's count", async () => {
      let openGate!: () => void;
      const gate = new Promise<void>((resolve) => (openGate = resolve));
      let successPending!: () => void;
      const pending = new Promise<void>((resolve) => (successPending = resolve));
      const slowSuccess = (_: number, store: ClusterSessionStore): ClusterSessionStore =>
        intercepting(store, {
          finish: async (...args) => {
            if (args[1].includes('"success"')) {
              successPending();
              await gate;
            }
            return store.finish(...args);
          },
        });
      const { stores, nodes: [a] } = await startCluster(1, { wrap: slowSuccess });
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
      expect(await drained).toBe(0);
      const { sessionId } = inspectToken(accepted.sessionToken).fields as { sessionId: string };
      expect(JSON.parse((await stores[0]!.getSession(sessionId))!.outcome!)).toMatchObject({ kind: "success" });
      const { messages } = await client.all(UNTIL_SILENT);
      expect(messages.map((m) => m.type)).toContain("invocationResult");
      expect(messages.map((m) => m.type)).not.toContain("invocationRejected");
      nodes = nodes.filter((node) => node !== a);
    });
  });
}
