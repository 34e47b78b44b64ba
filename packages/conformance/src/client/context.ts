/** What every client scenario receives: a scripted server, the adapter under test, and helpers that clean up after themselves. */
import { randomUUID } from "node:crypto";
import type { SchemaValueJson } from "@golem-stream/wire";
import { Mismatch, show } from "../check.js";
import { CheckLifetime, sleep } from "../lifetime.js";
import type { AdapterEvent } from "./adapter-protocol.js";
import { AdapterProcess } from "./adapter-process.js";
import { ScriptedServer, type Script } from "./scripted-server.js";
import { ScriptTokens } from "./script-tokens.js";

/** The bearer token every adapter is given. */
export const CONFORMANCE_TOKEN = "conformance-token";

export interface ClientSuiteOptions {
  /** Shell command that starts the adapter of the client under test. */
  readonly adapter: string;
  /** How long the suite waits for the client (or the adapter) to do what a scenario expects, in ms (default 10 000). */
  readonly timeoutMs?: number;
  /**
   * What the backpressure scenario allows the kernel's socket buffers (both
   * ends of the loopback connection) to hold beyond the client's own queue,
   * in bytes (default 48 MiB: Linux's default tcp_rmem ceiling of 32 MiB
   * plus a 4 MiB send buffer, with room to spare). Raise it on hosts with
   * larger socket buffers.
   */
  readonly socketBufferAllowanceBytes?: number;
}

export interface StartSpec {
  readonly method: string;
  /** Parameters; input streams as `{"kind":"stream","value":{"input":NAME,"element":…}}`. */
  readonly methodParameters: unknown;
  /** Default 30 000: long enough never to fire unless a scenario wants it to. */
  readonly acceptanceTimeoutMs?: number;
  /** Default 5. */
  readonly maxReconnectAttempts?: number;
  /** Ask the adapter to report every state the client persists (`checkpoint` events). */
  readonly checkpoints?: boolean;
}

/** Reconnect settings every adapter of a scenario gets: small delays, so scenarios stay quick. */
const RECONNECT = { maxReconnectDelayMs: 20 } as const;

/** The end of an invocation as the adapter reported it. */
export type Outcome = Extract<AdapterEvent, { type: "finished" | "error" }>;

export class ClientContext {
  readonly adapterCommand: string;
  readonly timeoutMs: number;
  readonly socketBufferAllowanceBytes: number;
  readonly tokens = new ScriptTokens();
  readonly idempotencyKey = `conformance-${randomUUID()}`;
  #server: ScriptedServer | undefined;
  #adapter: AdapterProcess | undefined;
  /** Adapters started by `continueIn`: later processes of the same invocation. */
  readonly #later: AdapterProcess[] = [];
  /** Fires when the scenario ends, whichever way: kills adapters and closes the server, started or still starting. */
  readonly #lifetime = new CheckLifetime();

  constructor(options: ClientSuiteOptions) {
    this.adapterCommand = options.adapter;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.socketBufferAllowanceBytes = options.socketBufferAllowanceBytes ?? 48 * 1024 * 1024;
  }

  /** Aborts when the scenario ends: for whatever a scenario starts itself. */
  get signal(): AbortSignal {
    return this.#lifetime.signal;
  }

  /** Waits `ms`; rejects at once when the scenario ends. */
  async sleep(ms: number): Promise<void> {
    await sleep(ms, this.signal);
  }

  get server(): ScriptedServer {
    if (this.#server === undefined) throw new Error("the scenario has not begun");
    return this.#server;
  }

  get adapter(): AdapterProcess {
    if (this.#adapter === undefined) throw new Error("the scenario has not begun");
    return this.#adapter;
  }

  /**
   * Starts the scripted server with `script` (and `refuse`, which upgrades it
   * refuses), then the adapter, and has it start one invocation of the demo agent `echo`.
   */
  async begin(script: Script, start: StartSpec, refuse?: Parameters<ScriptedServer["refuseUpgrades"]>[0]): Promise<void> {
    this.#server = await ScriptedServer.start(this.timeoutMs, this.signal);
    this.#server.serve(script);
    if (refuse !== undefined) this.#server.refuseUpgrades(refuse);
    this.#adapter = await AdapterProcess.spawn(this.adapterCommand, this.timeoutMs, this.signal);
    this.#adapter.send({
      type: "start",
      url: this.#server.url,
      token: CONFORMANCE_TOKEN,
      application: "demo",
      environment: "default",
      agentType: "echo",
      constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "conformance" }] } },
      method: start.method,
      methodParameters: start.methodParameters,
      idempotencyKey: this.idempotencyKey,
      acceptanceTimeoutMs: start.acceptanceTimeoutMs ?? 30_000,
      maxReconnectAttempts: start.maxReconnectAttempts ?? 5,
      ...RECONNECT,
      ...(start.checkpoints === true ? { checkpoints: true } : {}),
    });
  }

  /**
   * A fresh adapter process that continues the invocation from `state` (a
   * `checkpoint` event's) with `operation`, as a restarted process or
   * another owner would. It reports its own checkpoints too.
   */
  async continueIn(operation: "resume" | "takeover", state: unknown): Promise<AdapterProcess> {
    const adapter = await AdapterProcess.spawn(this.adapterCommand, this.timeoutMs, this.signal);
    this.#later.push(adapter);
    adapter.send({
      type: "attach",
      url: this.server.url,
      token: CONFORMANCE_TOKEN,
      operation,
      state,
      acceptanceTimeoutMs: 30_000,
      maxReconnectAttempts: 5,
      ...RECONNECT,
      checkpoints: true,
    });
    return adapter;
  }

  /** The state of the latest `checkpoint` event of `adapter` (default: the first adapter); fails without one. */
  latestCheckpoint(adapter: AdapterProcess = this.adapter): unknown {
    const found = adapter.events.filter((e) => e.type === "checkpoint").at(-1);
    if (found?.type !== "checkpoint") throw new Mismatch(`the adapter reported no checkpoint; events: ${adapter.summary()}`);
    return found.state;
  }

  /** `finished` or `error`, whichever the adapter reports first. */
  async outcome(adapter: AdapterProcess = this.adapter): Promise<Outcome> {
    return (await adapter.waitFor(
      (e) => e.type === "finished" || e.type === "error",
      "end of the invocation (finished or error)",
    )) as Outcome;
  }

  /** Fails unless the invocation finished successfully. */
  async finishedOk(adapter: AdapterProcess = this.adapter): Promise<void> {
    const outcome = await this.outcome(adapter);
    if (outcome.type !== "finished") throw new Mismatch(`the invocation failed: ${show(outcome)}; events: ${adapter.summary()}`);
  }

  /** The values the application received on output stream `stream`, in order. */
  items(stream = 0, adapter: AdapterProcess = this.adapter): SchemaValueJson[] {
    return adapter.events.flatMap((e) => (e.type === "item" && e.stream === stream && e.value !== undefined ? [e.value] : []));
  }

  /** The u32 payloads the application received on a `stream<u32>`. */
  numbers(stream = 0, adapter: AdapterProcess = this.adapter): number[] {
    return this.items(stream, adapter).map((v) => (v as { value: number }).value);
  }

  /** Fails with what went wrong outside the scenario's own expectations: a script error, a client message the codec refuses, a broken adapter line. */
  ensureClean(): void {
    const adapters = [...(this.#adapter === undefined ? [] : [this.#adapter]), ...this.#later];
    const problems = [...(this.#server?.problems ?? []), ...adapters.flatMap((a) => a.problems)];
    if (problems.length > 0) throw new Mismatch(problems.join("; "));
  }

  /**
   * Stops the adapters (asked to close first), closes the server, then ends the scenario's lifetime:
   * an adapter or server still starting (the deadline passed mid-`begin`) is killed or closed with it.
   */
  async dispose(): Promise<void> {
    try {
      await this.#adapter?.stop();
      for (const adapter of this.#later) await adapter.stop();
      await this.#server?.close();
    } finally {
      this.#lifetime.end();
    }
  }
}
