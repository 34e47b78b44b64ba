/**
 * Cluster nodes as child processes (`node-process.mjs`) sharing one
 * PostgreSQL schema, a keyring and a bearer token; plus what the tests read
 * about them: RSS from /proc, the sessions table.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Keyring } from "@golem-stream/tokens";
import { connect, freshSchema, pgUrl } from "../../support/stores.js";
import type { Upstream } from "@golem-stream/test-support";

export const TOKEN = "cluster-e2e-token";

/** `server.drain`'s answer, as the node process prints it. */
export interface DrainOutcome {
  readonly failed: number;
  readonly handedOver: number;
}

const SCRIPT = fileURLToPath(new URL("./node-process.mjs", import.meta.url));

export interface NodeProcess extends Upstream {
  readonly id: string;
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** stderr lines (the node's warnings and errors). */
  readonly log: string[];
  /** Resolves with the first log entry (a stderr JSON line, past or future) that `match` accepts. */
  logged(match: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Called with each new line of `log` (the `logged` helpers). */
  readonly watchers: Set<(line: string) => void>;
  /** Resolves with the exit code (null after a signal) and the signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set once the process exited. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** After a SIGTERM drain: what became of the invocations still running at its deadline (`server.drain`). */
  drained: DrainOutcome | undefined;
}

export interface ClusterOptions {
  readonly leaseTtlMs?: number;
  readonly drainMs?: number;
  /** The PostgreSQL the nodes use (default: the test run's, `pgUrl()`). */
  readonly pgUrl?: string;
  /** The stores' `outageGraceMs` (default: the store's own). */
  readonly outageGraceMs?: number;
  /** The nodes' `limits.maxReplays` (default: the server's); 0: a claimer fails what it claims. */
  readonly maxReplays?: number;
}

export class TestCluster {
  readonly schema = freshSchema();
  readonly keyring = Keyring.generate("k1").exportKeyringJson();
  readonly nodes: NodeProcess[] = [];
  readonly #options: Required<Omit<ClusterOptions, "pgUrl" | "outageGraceMs" | "maxReplays">> &
    Pick<ClusterOptions, "pgUrl" | "outageGraceMs" | "maxReplays">;

  constructor(options: ClusterOptions = {}) {
    this.#options = { ...options, leaseTtlMs: options.leaseTtlMs ?? 1000, drainMs: options.drainMs ?? 2000 };
  }

  /** Creates the schema once (nodes starting together would all migrate it). */
  async prepare(): Promise<void> {
    const store = await connect({
      schema: this.schema,
      nodeId: "test-setup",
      ...(this.#options.pgUrl === undefined ? {} : { connectionString: this.#options.pgUrl }),
    });
    await store.close();
  }

  /**
   * Starts a node; `databaseUrl` (default the cluster's `pgUrl`, else the test database's) lets its
   * connections go through a proxy; `port` (default a free one) lets a restarted node listen where
   * its clients reconnect.
   */
  async start(nodeId: string, databaseUrl?: string, port?: number): Promise<NodeProcess> {
    const child = spawn(process.execPath, [SCRIPT], {
      env: {
        ...process.env,
        GS_PG_URL: databaseUrl ?? this.#options.pgUrl ?? pgUrl(),
        ...(this.#options.outageGraceMs === undefined ? {} : { GS_OUTAGE_GRACE_MS: String(this.#options.outageGraceMs) }),
        GS_SCHEMA: this.schema,
        GS_NODE_ID: nodeId,
        GS_KEYRING: this.keyring,
        GS_TOKEN: TOKEN,
        GS_LEASE_TTL_MS: String(this.#options.leaseTtlMs),
        GS_DRAIN_MS: String(this.#options.drainMs),
        ...(port === undefined ? {} : { GS_PORT: String(port) }),
        ...(this.#options.maxReplays === undefined ? {} : { GS_MAX_REPLAYS: String(this.#options.maxReplays) }),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const log: string[] = [];
    const watchers = new Set<(line: string) => void>();
    createInterface({ input: child.stderr! }).on("line", (line) => {
      log.push(line);
      for (const watch of [...watchers]) watch(line);
    });
    const entry = (line: string): Record<string, unknown> => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { message: line };
      }
    };
    const logged = (match: (entry: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const found = log.map(entry).find(match);
        if (found !== undefined) return resolve(found);
        const watch = (line: string) => {
          const parsed = entry(line);
          if (!match(parsed)) return;
          watchers.delete(watch);
          resolve(parsed);
        };
        watchers.add(watch);
      });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    const lines = createInterface({ input: child.stdout! });
    const node = await new Promise<NodeProcess>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`node ${nodeId} did not start in 20 s:\n${log.join("\n")}`)), 20_000);
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`node ${nodeId} exited (${code ?? signal}) before listening:\n${log.join("\n")}`));
      });
      lines.once("line", (line) => {
        clearTimeout(timer);
        const { url, port, pid } = JSON.parse(line) as { url: string; port: number; pid: number };
        resolve({ id: nodeId, url, port, pid, child, log, logged, watchers, exited, exit: undefined, drained: undefined });
      });
    });
    lines.on("line", (line) => {
      const message = JSON.parse(line) as { drained?: DrainOutcome };
      if (message.drained !== undefined) node.drained = message.drained;
    });
    void exited.then((exit) => (node.exit = exit));
    this.nodes.push(node);
    return node;
  }

  /** SIGTERM (drain) and wait for the exit. */
  async drain(node: NodeProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    node.child.kill("SIGTERM");
    return node.exited;
  }

  /** SIGSTOP: the process stalls (no timer, no socket read, no heartbeat) while its connections stay open. */
  pause(node: NodeProcess): void {
    node.child.kill("SIGSTOP");
  }

  /** SIGCONT after `pause`. */
  resume(node: NodeProcess): void {
    node.child.kill("SIGCONT");
  }

  /** `kill -9`. */
  async kill(node: NodeProcess): Promise<void> {
    node.child.kill("SIGKILL");
    await node.exited;
  }

  /** Ends every node process still running. */
  async stopAll(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (node) => {
        if (node.exit === undefined) {
          node.child.kill("SIGKILL");
          await node.exited;
        }
      }),
    );
  }

  /** Every node's log, for failure messages. */
  logs(): string {
    return this.nodes.map((node) => `--- ${node.id} (pid ${node.pid}) ---\n${node.log.slice(-50).join("\n")}`).join("\n");
  }
}

/** Resolves once `node` has logged `count` lines, from `log[from]` on, whose text includes `text`. */
export function logged(node: NodeProcess, text: string, count = 1, from = 0): Promise<void> {
  const seen = (): boolean => node.log.slice(from).filter((line) => line.includes(text)).length >= count;
  if (seen()) return Promise.resolve();
  return new Promise((resolve) => {
    const watcher = (): void => {
      if (!seen()) return;
      node.watchers.delete(watcher);
      resolve();
    };
    node.watchers.add(watcher);
  });
}

/** VmRSS of a process, in KiB. */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (match === null) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]);
}
