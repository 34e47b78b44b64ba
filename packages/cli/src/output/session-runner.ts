/**
 * Runs one invocation handle (from `invoke` or `resume`) to its end: prints
 * every output stream to stdout as items are delivered, the result last,
 * and turns the outcome into an exit code.
 *
 * Delivery discipline: an item is written and its write acknowledged before
 * the consumer asks the client runtime for the next one, and only that ask
 * advances the stream's cursor and rewrites the checkpoint. So the
 * checkpoint never runs ahead of stdout.
 *
 * Why one file: one runner holds the streams' write order, the checkpoint and the exit code
 * together; every part of it (printing, cancelling on a broken pipe, the result) moves the same
 * cursor state.
 */
import { isClientError } from "@golem-stream/client";
import type { InputStream, Invocation, InvocationResult, OutputChunk, OutputStream } from "@golem-stream/client";
import { decodeSchemaGraph, isDirectBinary } from "@golem-stream/schema-value";
import type { SchemaGraph, SchemaType } from "@golem-stream/schema-value";
import { canonicalJson } from "@golem-stream/wire";
import type { JsonObject, JsonValue, SchemaValueJson } from "@golem-stream/wire";
import { EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import type { InputSource } from "../io/input-source.js";
import { report } from "../io/cli-io.js";
import { deliver } from "../io/delivery.js";
import { ReconnectNotice, serverAnswered } from "../io/reconnect-notice.js";
import type { Progress } from "../io/progress.js";
import type { OutputFormat, ResultDestination } from "../options.js";
import { bareLine, mayHoldStreams } from "./bare-output.js";
import { jsonText } from "./json-text.js";
import { failureOf } from "./exit-status.js";
import { chunkLine, isBytes, nativeJson, outcomeJson } from "./lines.js";
import { nextItemIndex, renderWithStreamNames, unplacedStreamName } from "./stream-names.js";
import { shellWord } from "../io/shell-word.js";
import { commandName } from "../io/command-name.js";
import { resumeCommand, type HintedConnection } from "../catalogue-selector.js";

export interface SessionRunOptions {
  readonly format: OutputFormat;
  /** With bare or raw output, where the rest of the result goes. */
  readonly result: ResultDestination;
  /** Shared with whoever draws input progress, so all bars live in one block. */
  readonly progress: Progress;
  /**
   * On SIGINT/SIGTERM/SIGHUP: true cancels the invocation (nothing could resume it),
   * false only detaches, so `resume` can continue from the checkpoint.
   */
  readonly cancelOnInterrupt: boolean;
  /** `resume`: this process starts away from the session (a crash, a restart may lie behind). */
  readonly resumed: boolean;
  /** The client's reconnect attempts (`--retries`), for the notice while the server is away. */
  readonly retries: number;
  /** The checkpoint file, named in the hint printed when an interrupt only detaches. */
  readonly checkpoint?: string;
  /** The server and catalogue bound in effect, which the `resume` a hint suggests carries. */
  readonly connection?: HintedConnection;
  /**
   * `invoke`: the input streams this process feeds, from stdin or a file, which `resume` cannot
   * feed again; one failing (a line that is no item of its type) is reported at once, naming its
   * source.
   */
  readonly inputs?: ReadonlyMap<InputStream, InputSource>;
}

/**
 * How long a cancel waits, once sent, for the server to answer the connection's close
 * (the client's `cancelConfirmTimeoutMs`). Only then is it certain that the server read the
 * cancel: exiting earlier can lose the last frames.
 */
export const CANCEL_CLOSE_WAIT_MS = 2_000;

/**
 * How long a cancel that ended inputs the method had open waits, once the server has ended them,
 * for the method to return or fail (the client's `cancelReturnTimeoutMs`). A method that reads
 * them fails at once; one that does not is beyond any cancel, and waiting for it held Ctrl-C for
 * as long as the method ran.
 */
export const CANCEL_RETURN_WAIT_MS = 2_000;

/**
 * The lines `invoke` prints are not protocol messages, and canonicalJson's default bound (the
 * 8 MiB of a text message) does not fit them: a 16 MiB `stream<binary>` item is 22 MiB of base64
 * in its `blob` line, and a result or item near 8 MiB of native JSON grows in its event line.
 * What they print is bounded already, by the protocol's limits on what the client received.
 */
const UNBOUNDED = { maxBytes: Number.MAX_SAFE_INTEGER };

interface StreamInfo {
  readonly name: string;
  readonly elementType: SchemaType | undefined;
}

/** stdout failed (a full disk, EIO): the error, for the message. */
interface WriteFailure {
  readonly writeError: unknown;
}

/** raw: the one stream's bytes; bare: the one stream's items as lines; lines: `{"stream","item"}`; json: events. */
type Mode = "raw" | "bare" | "lines" | "json";

export async function runSession(call: Invocation, io: CliIo, options: SessionRunOptions): Promise<ExitCode> {
  const runner = new SessionRunner(call, io, options);
  return runner.run();
}

class SessionRunner {
  readonly #call: Invocation;
  readonly #io: CliIo;
  readonly #options: SessionRunOptions;
  readonly #progress: Progress;
  readonly #names = new Map<string, StreamInfo>();
  readonly #consumers = new Map<string, Promise<void>>();
  #graph: SchemaGraph | undefined;
  #mode: Mode;
  /** Readers printing an item right now, and who waits for one to finish (see #infoOf). */
  #printing = 0;
  readonly #printed: (() => void)[] = [];
  /** Streams whose reader waits in `next()`: one with an item queued hands it out next (see #infoOf). */
  readonly #taking = new Set<OutputStream>();
  #streamFailure: string | undefined;
  /** A stream's own error end was reported when its reader saw it (`#streamFailed`). */
  #streamFailureReported = false;
  /** Items printed by this run, and the streams whose whole output an earlier run delivered (`resume` of a finished invocation). */
  #itemsPrinted = 0;
  #deliveredBefore = 0;
  /** Set once the connection was lost: a failure after it may come from a server restart. */
  #wasAway: boolean;
  /** Whether an invocation may exist on the server yet (see FailureContext.started). */
  #started: "none" | "unknown" | "accepted";
  /** The last retryable error the server answered with: it was there, so no restart is guessed. */
  #serverError: string | undefined;
  readonly #reconnects: ReconnectNotice;
  /** Set once `run` decided the outcome. */
  #settled = false;
  /** A failure reaches `#fail` from the handle and from its streams; it is reported once. */
  #failureReported = false;
  /** The first failure of reading stdin, reported when it happened: the invocation's failure after it does not repeat it. */
  #inputFailure: unknown;
  readonly #resultKnown: Promise<void>;
  #markResultKnown!: () => void;
  /**
   * Resolves when stdout failed (disk full, …). Readers then stop asking for
   * items, so no cursor passes what was not written.
   */
  readonly #outputFailed: Promise<unknown>;
  #markOutputFailed!: (error: unknown) => void;

  constructor(call: Invocation, io: CliIo, options: SessionRunOptions) {
    this.#call = call;
    this.#io = io;
    this.#options = options;
    this.#progress = options.progress;
    this.#mode = options.format === "json" ? "json" : "lines";
    this.#wasAway = options.resumed;
    this.#started = options.resumed ? "accepted" : "none";
    this.#reconnects = new ReconnectNotice(io, options.retries);
    this.#resultKnown = new Promise((resolve) => (this.#markResultKnown = resolve));
    this.#outputFailed = new Promise((resolve) => (this.#markOutputFailed = resolve));
  }

  async run(): Promise<ExitCode> {
    const call = this.#call;
    call.on("accepted", (event) => {
      this.#started = "accepted";
      // Once the outcome is decided, a reconnection only carries the cancel: its hint says so.
      if (this.#settled) return;
      this.#reconnects.reconnected();
      if (this.#mode === "json") {
        this.#emitLater({ event: "accepted", operation: event.operation, attemptId: event.attemptId, replayed: event.replayed });
      }
    });
    call.on("reconnecting", (event) => {
      if (this.#settled) return;
      if (serverAnswered(event.cause)) {
        this.#serverError = event.cause;
      } else {
        this.#wasAway = true;
        // A start that went unanswered may have been committed all the same.
        if (this.#started === "none") this.#started = "unknown";
      }
      this.#progress.stop();
      this.#reconnects.reconnecting(event);
      if (this.#mode === "json") {
        this.#emitLater({ event: "reconnecting", cause: event.cause, delayMs: event.delayMs, failures: event.failures });
      }
    });
    call.on("stream", (stream) => this.#consume(stream));
    const inputs = this.#options.inputs;
    if (inputs !== undefined && inputs.size > 0) {
      call.on("inputFailed", ({ input, error }) => {
        this.#inputFailure ??= error;
        this.#progress.stop();
        const source = inputs.get(input)?.name ?? "an input";
        report(
          this.#io,
          `golem-stream: reading ${source} failed, the input stream was cancelled: ${error instanceof Error ? error.message : String(error)}`,
        );
      });
    }

    const interrupted = new Promise<"interrupted">((resolve) => {
      if (this.#io.signal.aborted) resolve("interrupted");
      this.#io.signal.addEventListener("abort", () => resolve("interrupted"), { once: true });
    });
    const outputFailed = this.#outputFailed.then((error) => this.#outputOutcome(error));
    const outcome = await Promise.race([this.#complete(), interrupted, outputFailed]);
    this.#progress.stop();
    this.#reconnects.clear();
    // The outcome is decided: whatever still ends in the background is not reported.
    this.#settled = true;
    if (outcome === "stdout-closed") {
      // Quiet, as a program stopped by SIGPIPE: only a cancel that may not have arrived is news.
      if (this.#options.cancelOnInterrupt) {
        const cancelled = await this.#cancel("stdout was closed", { quiet: true });
        // A success is no news either: nothing keeps running.
        if (cancelled.kind === "undelivered" || cancelled.kind === "not-reached") {
          report(this.#io, `golem-stream: stdout was closed; ${cancelled.message}`);
        }
      }
      return EXIT.stdoutClosed;
    }
    if (typeof outcome === "object") {
      // Like a closed pipe, but news: without a checkpoint nothing could ever resume the
      // invocation, so it is cancelled rather than left to the server's detached timeout.
      const why = `cannot write output (${outcome.writeError instanceof Error ? outcome.writeError.message : String(outcome.writeError)})`;
      if (this.#options.cancelOnInterrupt) {
        const cancelled = await this.#cancel("cannot write output");
        const because = cancelled.kind === "cancelled" ? " (without --checkpoint nothing could resume it)" : "";
        report(this.#io, `golem-stream: ${why}; ${cancelled.message}${because}`);
      } else {
        report(
          this.#io,
          `golem-stream: ${why}; nothing was cancelled and the checkpoint stops before the unwritten item: ${this.#detachedHint()}`,
        );
      }
      return EXIT.outputFailed;
    }
    if (outcome !== "interrupted") {
      if (outcome === EXIT.success) this.#sayIfNothingWasLeft();
      return outcome;
    }
    if (this.#options.cancelOnInterrupt) {
      report(this.#io, `golem-stream: interrupted; ${(await this.#cancel("interrupted")).message}`);
    } else {
      report(this.#io, `golem-stream: interrupted; ${this.#detachedHint()}`);
    }
    return EXIT.interrupted;
  }

  /**
   * Cancels the invocation and waits until the server has it: the client's
   * cancel reconnects for it if the connection is down (within its reconnect
   * policy), and is `delivered` only once the server answered the close that
   * follows it (within `CANCEL_CLOSE_WAIT_MS`). A method that had not returned
   * and had no input open for the cancel to end is beyond any cancel: the
   * client waits as long for its result, then says `not-reached`; so is one
   * that had an input open and does not read it: the client waits
   * `CANCEL_RETURN_WAIT_MS` after the server ended it, then says `not-reached`
   * too. A method that returned without being stopped, no output cut, is
   * `succeeded`: the server records a success. A second Ctrl-C exits at once.
   * Says what became of it; `cancelled`, `succeeded` and `already-over` mean
   * nothing is left running.
   * `quiet` (a closed stdout, which ends the run without a word): no hint while it waits.
   */
  async #cancel(
    why: string,
    { quiet = false } = {},
  ): Promise<{ readonly kind: "cancelled" | "succeeded" | "already-over" | "undelivered" | "not-reached"; readonly message: string }> {
    const cancelling = this.#call.cancel(why);
    const hint = quiet
      ? undefined
      : setTimeout(
          () =>
            report(
              this.#io,
              `golem-stream: ${why}; cancelling on the server and giving its method ${CANCEL_RETURN_WAIT_MS / 1000} s to stop ` +
                "(Ctrl-C again to exit without waiting)",
            ),
          500,
        );
    // A second Ctrl-C exits at once (bin.ts): then this is all that is left to say.
    const exitNote = this.#io.exitNote;
    if (exitNote !== undefined)
      exitNote.text = `${why}; exited without waiting for the cancel, so the invocation may keep running on the server`;
    const cancelled = await cancelling.finally(() => {
      clearTimeout(hint);
      if (exitNote !== undefined) exitNote.text = undefined;
    });
    if (cancelled.kind === "undelivered") {
      return {
        kind: "undelivered",
        message: `the cancel did not reach the server (${cancelled.error.message}), the invocation may keep running`,
      };
    }
    if (cancelled.kind === "not-reached") {
      const why =
        cancelled.inputsEnded === true
          ? `the server ended its input, but its method had not returned ${CANCEL_RETURN_WAIT_MS / 1000} s later (it may not read it, or is still stopping)`
          : "its method had not returned and had no input open to cancel";
      return {
        kind: "not-reached",
        message: `the cancel could not reach the invocation (${why}), so it may keep running on the server until it returns or the server gives it up`,
      };
    }
    if (cancelled.kind === "invocation-succeeded") {
      return {
        kind: "succeeded",
        message: "the cancel did not stop the invocation: its method returned, and it finished as a success on the server",
      };
    }
    if (cancelled.kind === "already-over") return { kind: "already-over", message: "the invocation had already ended" };
    return { kind: "cancelled", message: "the invocation was cancelled" };
  }

  /**
   * `resume` of an invocation that had finished and whose every output stream an earlier run
   * delivered to its end prints nothing of its own: say so, or a silent exit 0 looks like a
   * resume that did not work. (`--output json` says it with each stream's `already-delivered`.)
   */
  #sayIfNothingWasLeft(): void {
    if (!this.#options.resumed || this.#mode === "json" || this.#itemsPrinted > 0) return;
    if (this.#consumers.size === 0 || this.#deliveredBefore !== this.#consumers.size) return;
    const by = this.#options.checkpoint === undefined ? "an earlier run" : `the run that wrote ${shellWord(this.#options.checkpoint)}`;
    report(this.#io, `golem-stream: nothing left to print: the invocation had finished and ${by} had already printed all of its output`);
  }

  /** How a failed write to stdout (or of the checkpoint) ends the run. */
  #outputOutcome(error: unknown): ExitCode | "stdout-closed" | WriteFailure {
    if (isClientError(error)) return this.#fail(error); // the checkpoint could not be written
    // The reader went away (`| head`): not a failure, but the end of the run like a Ctrl-C.
    if ((error as NodeJS.ErrnoException | undefined)?.code === "EPIPE") return "stdout-closed";
    return { writeError: error };
  }

  /** What a detached invocation's user can do next, with the real checkpoint path. */
  #detachedHint(): string {
    const command = commandName(this.#io.env, this.#io.executable);
    const resume =
      this.#options.checkpoint === undefined
        ? `\`${command} resume\` with its checkpoint`
        : `\`${resumeCommand(this.#options.checkpoint, this.#options.connection, command)}\``;
    const inputs = [...(this.#options.inputs?.values() ?? [])];
    if (inputs.length === 0) return `the invocation keeps running, ${resume} continues it`;
    const reads = inputs.map((input) => `${input.parameter} reads ${input.fromStdin ? "stdin" : shellWord(input.name)}`).join(", ");
    // A checkpoint keeps no file names (docs/protocol/cli.md): a file is as lost to resume as stdin.
    const lost = inputs.every((input) => input.fromStdin) ? "which no other process can continue" : "which resume cannot feed again";
    return (
      `the invocation keeps running and ${resume} continues its output, but not its input: ${reads}, ${lost}, ` +
      "so unless the server already had all of it, resume has it cancelled (source-unavailable) and the invocation then usually fails"
    );
  }

  async #complete(): Promise<ExitCode | "stdout-closed" | WriteFailure> {
    let result: InvocationResult;
    try {
      result = await this.#call.result;
    } catch (error) {
      return this.#fail(error);
    }
    try {
      this.#onResult(result);
    } catch (error) {
      // The client checked the envelope; a graph this CLI cannot read is the server's fault.
      this.#call.cancel("unreadable result");
      return this.#fail(
        new Error(`the server sent a result this CLI cannot read: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
    let finishError: unknown;
    await this.#call.finished.catch((error: unknown) => (finishError = error));
    await this.#allConsumers();
    if (finishError !== undefined) return this.#fail(finishError);
    try {
      await this.#printResult(result);
    } catch (error) {
      this.#markOutputFailed(error);
      return this.#outputOutcome(error);
    }
    if (this.#streamFailure !== undefined) {
      if (!this.#streamFailureReported) report(this.#io, `golem-stream: ${this.#streamFailure}`);
      return EXIT.invocationFailed;
    }
    return EXIT.success;
  }

  #fail(error: unknown): ExitCode {
    const context = {
      wasAway: this.#wasAway,
      resumed: this.#options.resumed,
      started: this.#started,
      ...(this.#serverError === undefined ? {} : { serverError: this.#serverError }),
      ...(this.#options.checkpoint === undefined ? {} : { checkpoint: this.#options.checkpoint }),
      command: commandName(this.#io.env, this.#io.executable),
      ...(this.#options.connection === undefined ? {} : { connection: this.#options.connection }),
    };
    const failure = failureOf(error, context);
    // After an interrupt (or a broken stdout) the outcome was already reported; this is noise.
    if (this.#settled || this.#failureReported) return failure.exitCode;
    this.#failureReported = true;
    this.#progress.stop();
    this.#reconnects.clear();
    if (this.#mode === "json")
      this.#emitLater({ event: "failed", ...(failure.code === undefined ? {} : { code: failure.code }), message: failure.message });
    // stderr said already why stdin failed; the event above keeps it, for a reader of stdout alone.
    const shown = this.#inputFailure === undefined ? failure : failureOf(error, { ...context, inputFailureShown: this.#inputFailure });
    report(this.#io, `golem-stream: ${shown.message}`);
    return failure.exitCode;
  }

  #onResult(result: InvocationResult): void {
    if (result.kind === "value") {
      const graph = decodeSchemaGraph(result.graph, { streams: "allowed" });
      this.#graph = graph;
      const rendered = renderWithStreamNames(nativeJson(result.value), graph, graph.root, "$");
      for (const stream of rendered.streams) this.#name(stream.streamToken, stream.name, stream.elementType);
      const only = rendered.streams.length === 1 ? rendered.streams[0] : undefined;
      if (this.#options.format === "auto" && only !== undefined && !mayHoldStreams(graph, only.elementType)) {
        this.#mode = isDirectBinary(graph, only.elementType) === undefined ? "bare" : "raw";
      }
      if (this.#mode === "json") this.#emitLater({ event: "result", kind: "value", graph: result.graph, value: nativeJson(result.value) });
    } else if (this.#mode === "json") {
      this.#emitLater({ event: "result", kind: "none" });
    }
    this.#markResultKnown();
    if (result.kind === "value") for (const stream of result.streams) this.#consume(stream);
  }

  async #printResult(result: InvocationResult): Promise<void> {
    if (this.#mode === "json") {
      await this.#emit({ event: "finished", outcome: { kind: "success" } });
      return;
    }
    // A method without a result prints nothing, as a command with nothing to say: `{"result":null}`
    // read like an option's none, and a pipe got a line where nothing was produced.
    if (result.kind === "none") return;
    const graph = this.#graph as SchemaGraph;
    const rendered = renderWithStreamNames(nativeJson(result.value), graph, graph.root, "$");
    if (this.#mode === "lines") {
      await this.#emit({ result: rendered.plain });
    } else if (rendered.plain !== "$" && this.#options.result === "stderr") {
      // The one stream owns stdout; the rest of the result goes where people see it.
      report(this.#io, `result: ${canonicalJson(rendered.plain, UNBOUNDED)}`);
    }
  }

  #name(streamToken: string, name: string, elementType: SchemaType | undefined): void {
    if (!this.#names.has(streamToken)) this.#names.set(streamToken, { name, elementType });
  }

  /** Starts reading a stream once; every stream must be read, or its queue would stall the session. */
  #consume(stream: OutputStream): void {
    if (this.#consumers.has(stream.streamToken)) return;
    this.#consumers.set(stream.streamToken, this.#read(stream));
  }

  async #allConsumers(): Promise<void> {
    // Reading one stream can reveal more (nested streams), so settle until no new reader appeared.
    let settled = 0;
    while (settled !== this.#consumers.size) {
      settled = this.#consumers.size;
      await Promise.all(this.#consumers.values());
    }
  }

  async #read(stream: OutputStream): Promise<void> {
    await this.#resultKnown;
    const info = await this.#infoOf(stream.streamToken);
    const bytes = this.#graph !== undefined && info.elementType !== undefined && isDirectBinary(this.#graph, info.elementType) === "u8";
    const bar = this.#progress.stream(info.name, "out", { unit: bytes ? "bytes" : "items" });
    // Iterated by hand: leaving a `for await` early calls return(), which the
    // client counts as delivery of the item in hand — wrong when writing it
    // just failed. Only asking for the next item may advance the cursor.
    const iterator = stream[Symbol.asyncIterator]();
    // Items are indexed by their position in the stream, as in every run: the names of the streams
    // they hold (`$[3].items`) stay those an earlier run printed.
    for (let index = nextItemIndex(stream.retainedCursor); ; index++) {
      let next: IteratorResult<OutputChunk, undefined>;
      this.#taking.add(stream);
      try {
        next = await iterator.next();
      } catch (error) {
        this.#took(stream);
        bar.finish("failed");
        if (isClientError(error) && error.kind === "checkpoint-failed") {
          // Not this stream's outcome: the whole run stops, like a failed write to stdout.
          this.#markOutputFailed(error);
          return;
        }
        this.#streamFailed(info.name, error);
        break;
      }
      this.#took(stream);
      if (next.done === true) {
        bar.finish("done");
        break;
      }
      // The run is over (interrupted, or stdout failed): print nothing more, ask for nothing
      // more, so the checkpoint flushed at exit is not overtaken by output printed after it.
      if (this.#settled) return;
      this.#printing++;
      try {
        const { items, bytes } = await this.#print(info, stream.streamToken, next.value, index);
        bar.add(items, bytes);
        this.#itemsPrinted += items;
      } catch (error) {
        this.#markOutputFailed(error);
        return;
      } finally {
        this.#printing--;
        for (const wake of this.#printed.splice(0)) wake();
      }
    }
    // The terminal is known when the loop saw it; after an abort (connection lost) it never comes.
    const outcome = await Promise.race([stream.ended, Promise.resolve(undefined)]);
    if (outcome?.kind === "already-delivered") this.#deliveredBefore++;
    if (this.#mode === "json") {
      try {
        await this.#emit({ event: "end", stream: info.name, outcome: outcome === undefined ? null : outcomeJson(outcome) });
      } catch (error) {
        this.#markOutputFailed(error);
        return;
      }
    }
    if (this.#settled) return;
    // Back for more after the end: the client retains the terminal's cursor now if it had not yet,
    // and this waits for that save; one that failed stops the run as a failed checkpoint write does.
    await iterator.next().catch((error: unknown) => {
      if (isClientError(error) && error.kind === "checkpoint-failed") this.#markOutputFailed(error);
    });
  }

  /**
   * A stream's reader observed an error. Its own end (the server's error or cancel outcome) is
   * reported at once, and the run's exit status becomes 1 then: the client saves the end's
   * cursor once the reader has it (protocol 6.5), in the next turn of the event loop, and a
   * process killed after that save leaves a checkpoint whose `resume` prints nothing of this
   * stream. Anything else fails the whole invocation, which `#fail` reports.
   */
  #streamFailed(name: string, error: unknown): void {
    const message = `stream ${name} ${failureOf(error).message}`;
    const ownEnd = isClientError(error) && (error.kind === "stream-failed" || error.kind === "stream-cancelled");
    const first = this.#streamFailure === undefined;
    this.#streamFailure ??= message;
    // Once the run's outcome is decided (an interrupt, a failed stdout), it is not news.
    if (!ownEnd || this.#settled) return;
    report(this.#io, `golem-stream: ${message}`);
    if (first) this.#streamFailureReported = true;
  }

  /**
   * A nested stream is named by the item that exposed it, which its parent's
   * reader renders. That item arrived before the child's mapping, so it is
   * either being printed now or about to be handed out: wait while any reader
   * is printing or waits in `next()` with an item queued (behind the checkpoint
   * write of the item before), plus a few turns for hand-over. A stream whose
   * parent item is not replayed (taken over past it) is named by its stream id.
   */
  async #infoOf(streamToken: string): Promise<StreamInfo> {
    for (let idleTurns = 0; idleTurns < 3 && !this.#names.has(streamToken);) {
      if (this.#printing > 0 || [...this.#taking].some((stream) => stream.queuedEntries > 0)) {
        await new Promise<void>((resolve) => this.#printed.push(resolve));
        idleTurns = 0;
      } else {
        await new Promise((resolve) => setImmediate(resolve));
        idleTurns++;
      }
    }
    const known = this.#names.get(streamToken);
    if (known !== undefined) return known;
    const info = { name: unplacedStreamName(streamToken), elementType: undefined };
    this.#names.set(streamToken, info);
    return info;
  }

  /** A reader left `next()`: whoever waits for a name looks again (it renders the item it took before it prints). */
  #took(stream: OutputStream): void {
    this.#taking.delete(stream);
    for (const wake of this.#printed.splice(0)) wake();
  }

  async #print(info: StreamInfo, streamToken: string, chunk: OutputChunk, index: number): Promise<{ items: number; bytes: number }> {
    if (this.#mode === "raw" && isBytes(chunk)) {
      const bytes = chunk instanceof Uint8Array ? chunk : chunk.bytes;
      await deliver(this.#io.stdout, bytes);
      return { items: chunk instanceof Uint8Array ? bytes.length : 1, bytes: bytes.length };
    }
    const plain = isBytes(chunk) ? undefined : this.#render(info, chunk, index);
    if (this.#mode === "bare" && !isBytes(chunk)) {
      const text = bareLine(plain ?? nativeJson(chunk));
      await deliver(this.#io.stdout, text);
      return { items: 1, bytes: Buffer.byteLength(text) };
    }
    const line = chunkLine(this.#mode === "json" ? "json" : "lines", info.name, streamToken, chunk, plain);
    const text = await this.#emit(line.json);
    return { items: line.items, bytes: line.bytes ?? text.length };
  }

  /** Plain JSON of an item, naming the streams it exposes; undefined when its type is unknown. */
  #render(info: StreamInfo, value: SchemaValueJson, index: number): JsonValue | undefined {
    const graph = this.#graph;
    if (graph === undefined || info.elementType === undefined) return undefined;
    try {
      const rendered = renderWithStreamNames(nativeJson(value), graph, info.elementType, `${info.name}[${index}]`);
      for (const stream of rendered.streams) this.#name(stream.streamToken, stream.name, stream.elementType);
      return rendered.plain;
    } catch {
      return undefined;
    }
  }

  /** Writes a line without waiting for it; a failed write stops the run like any other. */
  #emitLater(line: JsonObject): void {
    this.#emit(line).catch((error: unknown) => this.#markOutputFailed(error));
  }

  /**
   * One line of output. Event lines (`--output json`) are canonical JSON;
   * item lines keep the order they were built in (`stream` first), which
   * reads better and is still one JSON object per line.
   */
  async #emit(line: JsonObject): Promise<string> {
    const text = `${this.#mode === "json" ? canonicalJson(line, UNBOUNDED) : jsonText(line)}\n`;
    await deliver(this.#io.stdout, text);
    return text;
  }
}
