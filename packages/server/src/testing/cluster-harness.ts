/**
 * The harness of the cluster scenarios (cluster-scenarios.ts): nodes are
 * `createSessionServer`s, each on its own port, over stores of one shared
 * backend (the caller's `openStores`), closed with their stores after each
 * scenario; and the moves the scenarios share (a resume message, a start at
 * one node resumed at another, a store with some methods replaced).
 */
import { randomUUID } from "node:crypto";
import type { afterEach as AfterEach } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import { createDemoHost } from "../demo/host.js";
import { createSessionServer, type SessionServer } from "../server.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { Logger, ServerLimits } from "../options.js";
import type { AgentHost } from "../agent-host.js";
import { v, type demoStart } from "./demo-messages.js";
import { RawClient, TEST_TOKEN as TOKEN } from "./raw-client.js";
import type { Pauses } from "./pauses.js";
import { Conditions } from "./conditions.js";

export type Accepted = Extract<ServerMessage, { type: "invocationAccepted" }>;

export interface Node {
  readonly id: string;
  readonly server: SessionServer;
  readonly url: string;
}

/** Opens `count` node stores (node ids of the caller's choice) on one fresh shared backend. */
export type OpenClusterStores = (count: number) => Promise<ClusterSessionStore[]>;

/** `store` with some methods replaced (a replacement calls the original on `store` itself); the rest pass through. */
export function intercepting(store: ClusterSessionStore, replacements: Partial<ClusterSessionStore>): ClusterSessionStore {
  return new Proxy(store, {
    get(target, name) {
      const replacement = (replacements as Record<PropertyKey, unknown>)[name];
      if (replacement !== undefined) return replacement;
      const value = Reflect.get(target, name) as unknown;
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Adds up the items of the chunks a store wrapper is handed: a scenario waits until a node holds
 * items in flight, or until their commits have settled, instead of waiting for a while.
 */
export class ItemCount {
  #items = 0n;
  readonly #conditions = new Conditions();

  add(chunk: { readonly itemCount: bigint }): void {
    this.#items += chunk.itemCount;
    this.#conditions.check();
  }

  /** Resolves once the chunks added so far hold at least `items` items. */
  reached(items: bigint): Promise<void> {
    return this.#conditions.until(() => this.#items >= items);
  }
}

/** Sends `texts[from..to)` on `channel` as string input items, each numbered by its index in `texts`. */
export function sendTexts(client: RawClient, channel: number, texts: readonly string[], from = 0, to = texts.length): void {
  for (let i = from; i < to; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(texts[i]!) });
}

/** Sends `texts[from..]` as {@link sendTexts} does, then the stream's end after the last of them. */
export function sendTextsThenEnd(client: RawClient, channel: number, texts: readonly string[], from = 0): void {
  sendTexts(client, channel, texts, from);
  client.send({ type: "inputStreamEnd", channel, sequence: BigInt(texts.length) });
}

/**
 * Every client's `all()` gives up once the server has sent nothing for 20 s,
 * with a list of what it received: a hang then names the stream that
 * stopped instead of only timing out. The bound is on silence, not on the
 * total: a scenario that moves hundreds of megabytes through a database on
 * a loaded machine keeps going as long as it makes progress.
 */
export const UNTIL_SILENT = { idleMs: 20_000 } as const;

/** How a scenario's nodes differ from the defaults. */
export interface ClusterSetup {
  /** Default 10 000. */
  readonly leaseTtlMs?: number;
  readonly wrap?: (index: number, store: ClusterSessionStore) => ClusterSessionStore;
  readonly logger?: (index: number) => Logger;
  readonly limits?: Partial<ServerLimits>;
  /** Told of every node's backpressure pauses. */
  readonly pauses?: Pauses;
  /** The agents every node serves; default the demo's. */
  readonly host?: AgentHost;
}

export interface ClusterHarness {
  /** `count` nodes on one backend; `wrap` may stand in front of a node's store (index 0 is node A). */
  startCluster(count: number, setup?: ClusterSetup): Promise<{ stores: ClusterSessionStore[]; nodes: Node[] }>;
  resume(operation: "resume" | "takeover", sessionToken: string, outputCursors?: string[]): ResumeMessage;
  /** Starts at `owner` (which then runs the agent), drops that connection, and resumes at `at`. */
  startThenResume(owner: Node, at: Node, start: ReturnType<typeof demoStart>): Promise<{ accepted: Accepted; client: RawClient }>;
  /** A node the scenario closed itself: it is not closed again after the scenario. */
  closedByScenario(node: Node | undefined): void;
}

/** A `resumeAttach` with a fresh attempt id. */
export interface ResumeMessage {
  readonly type: "resumeAttach";
  readonly attemptId: string;
  readonly operation: "resume" | "takeover";
  readonly outputCursors: string[];
  readonly sessionToken: string;
}

/** The nodes and stores of each scenario, closed after it (`afterEach`). */
export function clusterHarness(afterEach: typeof AfterEach, openStores: OpenClusterStores): ClusterHarness {
  let nodes: Node[] = [];
  let opened: ClusterSessionStore[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((node) => node.server.close()));
    await Promise.all(opened.map((store) => store.close()));
    nodes = [];
    opened = [];
  });

  async function startCluster(
    count: number,
    { leaseTtlMs = 10_000, wrap = (_, store) => store, logger, limits, pauses, host }: ClusterSetup = {},
  ): Promise<{ stores: ClusterSessionStore[]; nodes: Node[] }> {
    const stores = await openStores(count);
    opened.push(...stores);
    const keyring = Keyring.generate("k1");
    for (const [index, store] of stores.entries()) {
      const server = createSessionServer({
        store: wrap(index, store),
        host: host ?? createDemoHost(),
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

  function resume(operation: "resume" | "takeover", sessionToken: string, outputCursors: string[] = []): ResumeMessage {
    return { type: "resumeAttach", attemptId: randomUUID(), operation, outputCursors, sessionToken };
  }

  async function startThenResume(
    owner: Node,
    at: Node,
    start: ReturnType<typeof demoStart>,
  ): Promise<{ accepted: Accepted; client: RawClient }> {
    const first = await RawClient.connect(owner.url);
    first.send(start);
    const accepted = (await first.nextOf("invocationAccepted")) as Accepted;
    first.terminate();
    const client = await RawClient.connect(at.url);
    client.send(resume("resume", accepted.sessionToken));
    return { accepted, client };
  }

  const closedByScenario = (node: Node | undefined): void => {
    nodes = nodes.filter((known) => known !== node);
  };
  return { startCluster, resume, startThenResume, closedByScenario };
}
