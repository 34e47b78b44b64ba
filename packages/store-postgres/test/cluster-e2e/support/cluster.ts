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

const SCRIPT = fileURLToPath(new URL("./node-process.mjs", import.meta.url));

export interface NodeProcess extends Upstream {
  readonly id: string;
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** stderr lines (the node's warnings and errors). */
  readonly log: string[];
  /** Resolves with the exit code (null after a signal) and the signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set once the process exited. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** `{"drained": n}` after a SIGTERM drain, the number of invocations it failed. */
  drained: number | undefined;
}

export interface ClusterOptions {
  readonly leaseTtlMs?: number;
  readonly drainMs?: number;
}

export class TestCluster {
  readonly schema = freshSchema();
  readonly keyring = Keyring.generate("k1").exportKeyringJson();
  readonly nodes: NodeProcess[] = [];
  readonly #options: Required<ClusterOptions>;

  constructor(options: ClusterOptions = {}) {
    this.#options = { leaseTtlMs: options.leaseTtlMs ?? 1000, drainMs: options.drainMs ?? 2000 };
  }

  /** Creates the schema once (nodes starting together would all migrate it). */
  async prepare(): Promise<void> {
    const store = await connect({ schema: this.schema, nodeId: "test-setup" });
    await store.close();
  }

  async start(nodeId: string): Promise<NodeProcess> {
    const child = spawn(process.execPath, [SCRIPT], {
      env: {
        ...process.env,
        GS_PG_URL: pgUrl(),
        GS_SCHEMA: this.schema,
        GS_NODE_ID: nodeId,
        GS_KEYRING: this.keyring,
        GS_TOKEN: TOKEN,
        GS_LEASE_TTL_MS: String(this.#options.leaseTtlMs),
        GS_DRAIN_MS: String(this.#options.drainMs),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const log: string[] = [];
    createInterface({ input: child.stderr! }).on("line", (line) => log.push(line));
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
        resolve({ id: nodeId, url, port, pid, child, log, exited, exit: undefined, drained: undefined });
      });
    });
    lines.on("line", (line) => {
      const message = JSON.parse(line) as { drained?: number };
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

/** VmRSS of a process, in KiB. */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (match === null) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]);
}
