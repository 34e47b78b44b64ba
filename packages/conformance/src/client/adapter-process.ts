/**
 * The client under test, seen from the suite: a child process started from a
 * shell command, fed commands on stdin, read for events on stdout (one JSON
 * object per line each way). It runs in its own process group so that
 * stopping it stops whatever the command started.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { Mismatch, show } from "../check.js";
import { releaseOnAbort } from "../lifetime.js";
import type { AdapterCommand, AdapterEvent } from "./adapter-protocol.js";

/** How much of the adapter's stderr a failure quotes. */
const STDERR_TAIL_BYTES = 2000;

export class AdapterProcess {
  readonly events: AdapterEvent[] = [];
  /** Lines that are not JSON objects with a `type`: adapter bugs, reported with the scenario. */
  readonly problems: string[] = [];
  readonly #child: ChildProcess;
  readonly #timeoutMs: number;
  readonly #waiters = new Set<() => void>();
  #stderr = "";
  #exited: Promise<void>;
  #exitStatus: string | undefined;

  private constructor(command: string, timeoutMs: number, signal: AbortSignal | undefined) {
    this.#timeoutMs = timeoutMs;
    this.#child = spawn(command, { shell: true, stdio: ["pipe", "pipe", "pipe"], detached: true });
    // Bound from the start: an adapter still starting when its scenario ends would otherwise outlive the suite.
    this.#child.once(
      "close",
      releaseOnAbort(signal, () => this.#killGroup()),
    );
    this.#child.stdin!.on("error", () => undefined);
    this.#child.stderr!.on("data", (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES);
    });
    createInterface({ input: this.#child.stdout! }).on("line", (line) => {
      if (line.trim() === "") return;
      try {
        const event = JSON.parse(line) as unknown;
        if (typeof event !== "object" || event === null || typeof (event as { type?: unknown }).type !== "string")
          throw new Error("not an event");
        this.events.push(event as AdapterEvent);
      } catch {
        this.problems.push(`the adapter wrote a line that is not an event: ${line.slice(0, 200)}`);
      }
      this.#wake();
    });
    this.#exited = new Promise((resolve) =>
      this.#child.once("close", (code, signal) => {
        this.#exitStatus = signal === null ? `status ${String(code)}` : `signal ${signal}`;
        this.#wake();
        resolve();
      }),
    );
    this.#child.once("error", (error) => {
      this.#exitStatus = `could not start: ${error.message}`;
      this.#wake();
    });
  }

  /**
   * Starts the adapter and waits for its `ready` event; an adapter that never gets ready is stopped.
   * `signal` kills the adapter's process group when it aborts, ready or not.
   */
  static async spawn(command: string, timeoutMs: number, signal?: AbortSignal): Promise<AdapterProcess> {
    signal?.throwIfAborted();
    const adapter = new AdapterProcess(command, timeoutMs, signal);
    try {
      await adapter.waitFor((e) => e.type === "ready", "the adapter's ready event");
    } catch (error) {
      await adapter.kill();
      throw signal?.aborted === true ? signal.reason : error;
    }
    return adapter;
  }

  send(command: AdapterCommand): void {
    this.#child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  #wake(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  /** The first event (from the beginning) that matches; fails after `timeoutMs` without one, or if the adapter exits. */
  async waitFor<E extends AdapterEvent>(match: (event: AdapterEvent) => event is E, what: string, timeoutMs?: number): Promise<E>;
  async waitFor(match: (event: AdapterEvent) => boolean, what: string, timeoutMs?: number): Promise<AdapterEvent>;
  async waitFor(match: (event: AdapterEvent) => boolean, what: string, timeoutMs = this.#timeoutMs): Promise<AdapterEvent> {
    const found = (): AdapterEvent | undefined => this.events.find(match);
    const now = found();
    if (now !== undefined) return now;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Mismatch(`did not see ${what} within ${timeoutMs} ms; adapter events: ${this.summary()}${this.#diagnostics()}`));
      }, timeoutMs);
      const check = (): void => {
        const event = found();
        if (event === undefined && this.#exitStatus === undefined) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        if (event !== undefined) resolve(event);
        else
          reject(new Mismatch(`the adapter exited (${this.#exitStatus}) before ${what}; events: ${this.summary()}${this.#diagnostics()}`));
      };
      this.#waiters.add(check);
    });
  }

  /** The events so far, shortened, for failure messages. */
  summary(): string {
    const shown = this.events
      .filter((e) => e.type !== "ready")
      .map((e) => (e.type === "item" ? `item(${e.stream}:${show(e.value ?? e.bytesHex)})` : show(e)));
    return shown.length > 30 ? `${shown.slice(0, 30).join(", ")}, … (${shown.length} events)` : shown.join(", ") || "none";
  }

  #diagnostics(): string {
    const stderr = this.#stderr.trim();
    const problems = this.problems.length === 0 ? "" : `; ${this.problems.slice(0, 5).join("; ")}`;
    return `${problems}${stderr === "" ? "" : `; adapter stderr: ${stderr.slice(-500)}`}`;
  }

  #killGroup(): void {
    if (this.#exitStatus === undefined && this.#child.pid !== undefined) {
      try {
        process.kill(-this.#child.pid, "SIGKILL");
      } catch {
        // exited meanwhile
      }
    }
  }

  /** The adapter crashes: its process group is killed at once, with no chance to say goodbye. */
  async kill(): Promise<void> {
    this.#killGroup();
    // A command the shell could not even start has no process to wait for.
    if (this.#child.pid !== undefined) await this.#exited;
  }

  /** Asks the adapter to close, and stops its process group if it does not exit promptly. */
  async stop(graceMs = 2000): Promise<void> {
    if (this.#exitStatus === undefined) {
      try {
        this.send({ type: "close" });
        this.#child.stdin!.end();
      } catch {
        // already gone
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.#exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
    }
    if (this.#exitStatus === undefined) await this.kill();
  }
}
