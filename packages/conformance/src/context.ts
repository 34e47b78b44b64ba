/** What every check receives: where the server is, how to reach it, and helpers that clean up after themselves. */
import type {
  InvocationAccepted,
  InvocationResult,
  InvocationStart,
  ResumeAttach,
  SchemaValueJson,
  ServerMessage,
} from "@golem-stream/wire";
import { randomUUID } from "node:crypto";
import { Connection, type Closed } from "./connection.js";
import { ensure, ensureEqual, Mismatch, show } from "./ensure.js";
import { traceViolations, type TraceOptions } from "./invariants.js";
import { probeUpgrade, type ProbeOptions, type ProbeResult } from "./http-probe.js";
import { CheckLifetime, sleep } from "./lifetime.js";

/**
 * Settings of the server under test that the protocol leaves to it (it may
 * enforce them with other values, or not at all): a check that needs one runs
 * only when the suite is told the server's value, and is skipped otherwise.
 */
export type ServerSetting = "firstMessageTimeoutMs" | "pingIntervalMs" | "maxConnectionsPerPrincipal" | "maxRunningSessionsPerPrincipal";

export interface SuiteOptions {
  /** ws:// or wss:// base URL of the server under test. */
  readonly url: string;
  /** A bearer token the server accepts. */
  readonly token: string;
  /** How long the server may stay silent while a check waits for it, in ms (default 5000). */
  readonly timeoutMs?: number;
  /** Shell command that restarts the server in place (same URL, same durable state); enables the restart section. */
  readonly restartCmd?: string | undefined;
  /** How long to wait for the server to come back after the restart command, in ms (default 30 000). */
  readonly restartTimeoutMs?: number;
  /**
   * The server's deadline for a connection's first message, in ms; enables
   * `liveness.first-message-deadline` (which waits that long). Unset: the check is skipped.
   */
  readonly firstMessageTimeoutMs?: number | undefined;
  /** How often the server pings a session socket, in ms; enables the `liveness.ping-*` checks. Unset: skipped. */
  readonly pingIntervalMs?: number | undefined;
  /**
   * Open session WebSockets the server allows one principal; enables
   * `limits.principal-connections-overloaded`, which opens that many with `boundedToken`. Unset: skipped.
   */
  readonly maxConnectionsPerPrincipal?: number | undefined;
  /**
   * Invocations the server lets one principal run at once; enables
   * `limits.principal-sessions-overloaded`, which starts that many with `boundedToken`. Unset: skipped.
   */
  readonly maxRunningSessionsPerPrincipal?: number | undefined;
  /**
   * The bearer token of the per-principal checks (default: `token`). Its principal must hold no
   * other connection or running invocation while those checks run: they count on it.
   */
  readonly boundedToken?: string | undefined;
  /**
   * The bearer token of a second principal the server accepts, other than `token`'s (another
   * caller, not another name of the same one); enables the `authorization` section, which checks
   * that this principal can neither resume, take over nor replay an attempt of `token`'s sessions,
   * nor read their output with their cursors. Unset: that section is skipped.
   */
  readonly otherPrincipalToken?: string | undefined;
  /**
   * The server continues invocations a restart interrupted (the demo methods are durable there):
   * the restart section then requires continuation instead of also accepting the documented failure,
   * and runs the checks marked `durable` (the server must then host the demo's `journal` method).
   */
  readonly durableRestart?: boolean;
}

export class SuiteContext {
  readonly url: string;
  readonly token: string;
  readonly timeoutMs: number;
  readonly restartCmd: string | undefined;
  readonly restartTimeoutMs: number;
  readonly durableRestart: boolean;
  readonly firstMessageTimeoutMs: number | undefined;
  readonly pingIntervalMs: number | undefined;
  readonly maxConnectionsPerPrincipal: number | undefined;
  readonly maxRunningSessionsPerPrincipal: number | undefined;
  readonly boundedToken: string;
  readonly otherPrincipalToken: string | undefined;
  /** Fires when the check ends (passed, failed or cut off by its deadline): everything the context started is released. */
  readonly #lifetime = new CheckLifetime();

  constructor(options: SuiteOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.restartCmd = options.restartCmd;
    this.restartTimeoutMs = options.restartTimeoutMs ?? 30_000;
    this.durableRestart = options.durableRestart === true;
    this.firstMessageTimeoutMs = options.firstMessageTimeoutMs;
    this.pingIntervalMs = options.pingIntervalMs;
    this.maxConnectionsPerPrincipal = options.maxConnectionsPerPrincipal;
    this.maxRunningSessionsPerPrincipal = options.maxRunningSessionsPerPrincipal;
    this.boundedToken = options.boundedToken ?? options.token;
    this.otherPrincipalToken = options.otherPrincipalToken;
  }

  /** A server setting the check declared it needs (`Check.needs`): the runner skips the check without it. */
  setting(name: ServerSetting): number {
    const value = this[name];
    if (value === undefined) throw new Error(`the suite was not told the server's ${name}`);
    return value;
  }

  /** Aborts when the check ends: a check passes it to whatever it starts that the context does not start for it. */
  get signal(): AbortSignal {
    return this.#lifetime.signal;
  }

  /** A connection that is terminated when the check ends, even if it is still connecting then. */
  async connect(options: { token?: string | undefined; protocols?: readonly string[]; autoPong?: boolean } = {}): Promise<Connection> {
    return Connection.open(this.url, {
      token: options.token ?? this.token,
      timeoutMs: this.timeoutMs,
      signal: this.signal,
      ...(options.protocols ? { protocols: options.protocols } : {}),
      ...(options.autoPong === undefined ? {} : { autoPong: options.autoPong }),
    });
  }

  /** One raw upgrade request to the session endpoint (see `probeUpgrade`), abandoned when the check ends. */
  async probe(options: Omit<ProbeOptions, "timeoutMs" | "signal"> = {}): Promise<ProbeResult> {
    return probeUpgrade(this.url, { timeoutMs: this.timeoutMs, ...options, signal: this.signal });
  }

  /** Waits `ms`; rejects at once when the check ends. */
  async sleep(ms: number): Promise<void> {
    await sleep(ms, this.signal);
  }

  /** Opens a connection (with `token`, default the suite's), sends `start` and waits for its acceptance. */
  async start(start: InvocationStart, token?: string): Promise<{ conn: Connection; accepted: InvocationAccepted }> {
    const conn = await this.connect({ token });
    conn.send(start);
    const accepted = await conn.nextOf("invocationAccepted");
    return { conn, accepted };
  }

  /** Opens a connection and sends a resumeAttach; returns the first answer. */
  async attach(
    sessionToken: string,
    operation: "resume" | "takeover",
    outputCursors: readonly string[] = [],
    attemptId = randomUUID(),
  ): Promise<{ conn: Connection; answer: ServerMessage; message: ResumeAttach }> {
    const conn = await this.connect();
    const message: ResumeAttach = { type: "resumeAttach", attemptId, operation, outputCursors, sessionToken };
    conn.send(message);
    const answer = await conn.next("the answer to resumeAttach");
    return { conn, answer, message };
  }

  /** Terminates every connection the check opened or is still opening, and stops every probe, sleep and child process it started. */
  cleanup(): void {
    this.#lifetime.end();
  }
}

/** Channel of the mapping that resolved `provisionalRef`. */
export function channelFor(accepted: InvocationAccepted, provisionalRef: string): number {
  const mapping = accepted.mappings.find((m) => m.provisionalRef === provisionalRef);
  if (mapping === undefined)
    throw new Mismatch(`invocationAccepted has no mapping for provisional reference ${provisionalRef}: ${show(accepted.mappings)}`);
  return mapping.channel;
}

/** The invocationResult among `messages`; fails without one. */
export function invocationResult(messages: readonly ServerMessage[]): InvocationResult {
  const result = messages.find((m) => m.type === "invocationResult");
  if (result?.type !== "invocationResult") throw new Mismatch(`no invocationResult among ${show(messages.map((m) => m.type))}`);
  return result;
}

/** The value the invocationResult among `messages` returned; undefined without one, or when it returned no value. */
export function resultValue(messages: readonly ServerMessage[]): SchemaValueJson | undefined {
  const result = messages.find((m) => m.type === "invocationResult");
  return result?.type === "invocationResult" && result.result.kind === "value" ? result.result.value : undefined;
}

/** The single output channel announced by the invocationResult of `messages`. */
export function resultChannel(messages: readonly ServerMessage[]): number {
  const result = invocationResult(messages);
  const output = result.mappings.find((m) => m.direction === "output");
  if (output === undefined) throw new Mismatch(`invocationResult announces no output stream: ${show(result)}`);
  return output.channel;
}

export function ensureTrace(messages: readonly ServerMessage[], options?: TraceOptions): void {
  const problems = traceViolations(messages, options);
  ensure(problems.length === 0, problems.slice(0, 3).join("; "));
}

export function ensureFinishedSuccess(messages: readonly ServerMessage[], closed: Closed): void {
  const last = messages.at(-1);
  ensure(last?.type === "invocationFinished" && last.outcome.kind === "success", `last message: ${show(last)}`);
  ensureEqual(closed.code, 1000, "close code after invocationFinished");
  ensureTrace(messages);
}

export interface ViolationExpectation {
  /** Acceptable rejection codes (the first is the one the protocol names). */
  readonly codes: readonly string[];
  /** Close codes accepted; default [1002]. */
  readonly closeCodes?: readonly number[];
  /** The rejection, if sent, must carry this attempt id. */
  readonly attemptId?: string;
  /** true: an invocationRejected must precede the close (enough was decodable). */
  readonly rejectionRequired?: boolean;
  /** Expected `retryable` flag of the rejection. */
  readonly retryable?: boolean;
}

/**
 * Waits for the close that must follow a violation and checks the optional
 * invocationRejected before it (protocol section 11: diagnostic when enough
 * is decodable, then close 1002).
 */
export async function ensureViolation(conn: Connection, expectation: ViolationExpectation): Promise<string> {
  const { messages, closed } = await conn.all();
  const closeCodes = expectation.closeCodes ?? [1002];
  const rejections = messages.filter((m) => m.type === "invocationRejected");
  const after = messages.filter(
    (m) => m.type === "invocationAccepted" && rejections.length > 0 && messages.indexOf(m) > messages.indexOf(rejections[0]!),
  );
  ensure(after.length === 0, "the server accepted after rejecting");
  const rejection = rejections.at(-1);
  if (expectation.rejectionRequired === true)
    ensure(rejection !== undefined, `no invocationRejected before close ${closed.code}; messages: ${show(messages.map((m) => m.type))}`);
  ensure(rejections.length <= 1, `${rejections.length} invocationRejected messages`);
  if (rejection?.type === "invocationRejected") {
    ensure(
      expectation.codes.includes(rejection.code),
      `invocationRejected code ${rejection.code} (${rejection.message}), expected ${expectation.codes.join(" or ")}`,
    );
    if (expectation.attemptId !== undefined) ensureEqual(rejection.attemptId, expectation.attemptId, "attemptId of the rejection");
    if (expectation.retryable !== undefined) ensureEqual(rejection.retryable, expectation.retryable, `retryable of ${rejection.code}`);
    ensure(
      messages.at(-1) === rejection,
      `messages after invocationRejected: ${show(messages.slice(messages.indexOf(rejection) + 1).map((m) => m.type))}`,
    );
  }
  ensure(closeCodes.includes(closed.code), `close code ${closed.code}, expected ${closeCodes.join(" or ")}`);
  return rejection?.type === "invocationRejected" ? `invocationRejected ${rejection.code}, close ${closed.code}` : `close ${closed.code}`;
}

/** A definitive rejection before acceptance: invocationRejected with the code and no acceptance. */
export async function ensureRejected(conn: Connection, codes: readonly string[], attemptId?: string): Promise<string> {
  return ensureRejection(await conn.next("invocationRejected"), codes, attemptId);
}

/** `answer` is a definitive rejection before acceptance: invocationRejected with one of `codes`, retryable false. */
export function ensureRejection(answer: ServerMessage, codes: readonly string[], attemptId?: string): string {
  ensure(answer.type === "invocationRejected", `expected invocationRejected ${codes.join("/")}, saw ${show(answer)}`);
  ensure(codes.includes(answer.code), `invocationRejected code ${answer.code} (${answer.message}), expected ${codes.join(" or ")}`);
  if (attemptId !== undefined) ensureEqual(answer.attemptId, attemptId, "attemptId of the rejection");
  ensureEqual(answer.retryable, false, `retryable of ${answer.code} before acceptance`);
  return `invocationRejected ${answer.code}`;
}

/** The answer to a first message must be a definitive rejection with `code` (retryable false before acceptance). */
export function ensureAnswerRejected(answer: ServerMessage, code: string, attemptId?: string): string {
  ensure(answer.type === "invocationRejected", `expected invocationRejected ${code}, saw ${show(answer)}`);
  ensureEqual(answer.code, code, `rejection code (${answer.message})`);
  ensureEqual(answer.retryable, false, `retryable of ${code} before acceptance`);
  if (attemptId !== undefined) ensureEqual(answer.attemptId, attemptId, "attemptId of the rejection");
  return `invocationRejected ${code}`;
}
