/**
 * The client adapter for `@golem-stream/client`: speaks the client adapter
 * protocol (../adapter-protocol.ts) on stdin/stdout and drives one
 * invocation of the real client. `runClientAdapter` is exported so that a
 * test can wrap the client's `Transport` (the seam the kit's own teeth use to
 * build faulty variants of this client without touching its source).
 */
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";
import {
  createClient,
  inputStream,
  isClientError,
  wsTransport,
  type Client,
  type Invocation,
  type OutputStream,
  type ParamNode,
  type ResumeState,
  type Transport,
} from "@golem-stream/client";
import type { SchemaValueJson } from "@golem-stream/wire";
import type { AdapterCommand, AdapterEvent, AttachCommand, ErrorCategory, StartCommand, StreamEndOutcome } from "../adapter-protocol.js";
import { ERROR_CATEGORIES } from "../adapter-protocol.js";
import { AsyncQueue } from "./async-queue.js";
import { stateFromJson, stateToJson } from "./state-json.js";

/** The client's types in this entry's signatures, importable from here. */
export type {
  ResumeState,
  AcceptedState,
  PendingStartState,
  Transport,
  Connection,
  ConnectionHandlers,
  ConnectRequest,
  CloseInfo,
  CatalogueRequestInit,
} from "@golem-stream/client";

export interface ClientAdapterOptions {
  readonly input?: NodeJS.ReadableStream;
  readonly output?: NodeJS.WritableStream;
  /** Wraps the transport the client uses (default `wsTransport()`). */
  readonly wrapTransport?: (transport: Transport) => Transport;
  /** Changes each state the client saves before it is reported (the kit's own teeth: a client that persists the wrong state). */
  readonly wrapCheckpoint?: (state: ResumeState) => ResumeState;
}

type InputQueue = AsyncQueue<SchemaValueJson> | AsyncQueue<Uint8Array>;

interface Reader {
  iterator: AsyncIterator<unknown>;
  credit: number;
  /** Report bytes by size and SHA-256 rather than as hex. */
  digest: boolean;
  delivered: number;
  running: boolean;
  done: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Replaces each `{"kind":"stream","value":{"input":…}}` leaf by a binding of the client, fed by a queue. */
function bindInputs(node: unknown, inputs: Map<string, InputQueue>): unknown {
  if (Array.isArray(node)) return node.map((child) => bindInputs(child, inputs));
  if (!isObject(node)) return node;
  const value = node.value;
  if (node.kind === "stream" && isObject(value) && typeof value.input === "string") {
    if (value.element === "u8") {
      const queue = new AsyncQueue<Uint8Array>();
      inputs.set(value.input, queue);
      return inputStream.bytes(queue);
    }
    const queue = new AsyncQueue<SchemaValueJson>();
    inputs.set(value.input, queue);
    return inputStream.values(queue);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, bindInputs(v, inputs)]));
}

function categoryOf(kind: string): ErrorCategory {
  return (ERROR_CATEGORIES as readonly string[]).includes(kind) ? (kind as ErrorCategory) : "other";
}

function bytesEvent(stream: number, bytes: Uint8Array, digest: boolean): AdapterEvent {
  if (!digest) return { type: "item", stream, bytesHex: Buffer.from(bytes).toString("hex") };
  return { type: "item", stream, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
}

function itemEvent(stream: number, chunk: unknown, digest: boolean): AdapterEvent {
  if (chunk instanceof Uint8Array) return bytesEvent(stream, chunk, digest);
  if (isObject(chunk) && chunk.bytes instanceof Uint8Array) return bytesEvent(stream, chunk.bytes, digest);
  return { type: "item", stream, value: chunk as SchemaValueJson };
}

export async function runClientAdapter(options: ClientAdapterOptions = {}): Promise<void> {
  const output = options.output ?? process.stdout;
  const emit = (event: AdapterEvent): void => {
    output.write(`${JSON.stringify(event, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}\n`);
  };
  const inputs = new Map<string, InputQueue>();
  const readers: Reader[] = [];
  let call: Invocation | undefined;
  /** Output streams by index: the result's in document order, then nested ones in order of discovery. */
  let streams: OutputStream[] | undefined;
  /** Nested streams that became known before the result (none in practice), indexed once it arrives. */
  const early: OutputStream[] = [];
  const pendingReads: { stream: number; count: number; digest: boolean }[] = [];

  const pump = async (index: number): Promise<void> => {
    const reader = readers[index]!;
    if (reader.running) return;
    reader.running = true;
    try {
      while (reader.credit > 0 && !reader.done) {
        const next = await reader.iterator.next();
        if (next.done === true) {
          reader.done = true;
          const ended = await streams![index]!.ended;
          const outcome: StreamEndOutcome =
            ended.kind === "ok" || ended.kind === "error" || ended.kind === "cancelled" ? ended : { kind: "ok" };
          emit({ type: "streamEnd", stream: index, outcome });
          break;
        }
        reader.credit -= 1;
        reader.delivered += 1;
        emit(itemEvent(index, next.value, reader.digest));
      }
    } catch (error) {
      reader.done = true;
      if (isClientError(error) && error.kind === "stream-failed") {
        emit({
          type: "streamEnd",
          stream: index,
          outcome: { kind: "error", code: error.code ?? "internal-error", message: error.message },
        });
      }
      // Anything else fails the invocation too; `finished` reports it.
    } finally {
      reader.running = false;
    }
    emit({ type: "readDone", stream: index, delivered: reader.delivered });
  };

  const register = (stream: OutputStream): void => {
    if (streams === undefined) {
      early.push(stream);
      return;
    }
    if (streams.includes(stream)) return;
    streams.push(stream);
    readers.push({ iterator: stream[Symbol.asyncIterator](), credit: 0, digest: false, delivered: 0, running: false, done: false });
    emit({ type: "stream", stream: streams.length - 1, streamToken: stream.streamToken });
  };

  const read = (stream: number, count: number, digest: boolean): void => {
    if (streams === undefined) {
      pendingReads.push({ stream, count, digest });
      return;
    }
    const reader = readers[stream];
    if (reader === undefined) {
      emit({ type: "commandError", message: `the result has no output stream ${stream}` });
      return;
    }
    reader.credit += count;
    reader.digest = digest;
    void pump(stream);
  };

  const clientFor = (command: StartCommand | AttachCommand): Client =>
    createClient({
      url: command.url,
      token: command.token,
      transport: (options.wrapTransport ?? ((t) => t))(wsTransport()),
      acceptanceTimeoutMs: command.acceptanceTimeoutMs,
      reconnect: { maxAttempts: command.maxReconnectAttempts, initialDelayMs: 1, maxDelayMs: command.maxReconnectDelayMs },
    });
  // Reported before the client goes on: the suite may stop this process as soon as it sees one.
  const checkpointsOf = (command: StartCommand | AttachCommand) =>
    command.checkpoints === true
      ? {
          onCheckpoint: (state: ResumeState) =>
            emit({ type: "checkpoint", state: stateToJson((options.wrapCheckpoint ?? ((s) => s))(state)) }),
        }
      : {};

  const start = (command: StartCommand): void => {
    const client = clientFor(command);
    call = client.invoke({
      ...checkpointsOf(command),
      application: command.application,
      environment: command.environment,
      agentType: command.agentType,
      constructorParameters: command.constructorParameters,
      method: command.method,
      methodParameters: bindInputs(command.methodParameters, inputs) as ParamNode,
      idempotencyKey: command.idempotencyKey,
    });
    observe(call);
  };

  const attach = (command: AttachCommand): void => {
    const client = clientFor(command);
    const state = stateFromJson(command.state);
    call = command.operation === "takeover" ? client.takeover(state, checkpointsOf(command)) : client.resume(state, checkpointsOf(command));
    observe(call);
  };

  const observe = (call: Invocation): void => {
    call.on("accepted", (e) => emit({ type: "accepted", operation: e.operation, attemptId: e.attemptId, replayed: e.replayed }));
    call.on("reconnecting", (e) => emit({ type: "reconnecting", cause: e.cause }));
    call.on("revoked", () => emit({ type: "revoked" }));
    call.on("stream", register);
    call.result.then(
      (result) => {
        const known = result.kind === "value" ? result.streams : [];
        streams = [...known];
        for (const stream of known)
          readers.push({ iterator: stream[Symbol.asyncIterator](), credit: 0, digest: false, delivered: 0, running: false, done: false });
        emit({ type: "result", kind: result.kind, streams: known.length });
        for (const stream of early.splice(0)) register(stream);
        for (const pending of pendingReads.splice(0)) read(pending.stream, pending.count, pending.digest);
      },
      () => undefined, // reported by `finished`
    );
    call.finished.then(
      () => emit({ type: "finished" }),
      (error: unknown) =>
        emit(
          isClientError(error)
            ? {
                type: "error",
                category: categoryOf(error.kind),
                ...(error.code === undefined ? {} : { code: error.code }),
                message: error.message,
              }
            : { type: "error", category: "other", message: error instanceof Error ? error.message : String(error) },
        ),
    );
  };

  const handle = async (command: AdapterCommand): Promise<boolean> => {
    switch (command.type) {
      case "start":
        if (call !== undefined) throw new Error("one start per adapter process");
        start(command);
        return true;
      case "attach":
        if (call !== undefined) throw new Error("one start or attach per adapter process");
        attach(command);
        return true;
      case "feed": {
        const queue = inputs.get(command.input);
        if (queue === undefined) throw new Error(`no input named ${JSON.stringify(command.input)}`);
        if ("bytesHex" in command) (queue as AsyncQueue<Uint8Array>).push(Buffer.from(command.bytesHex, "hex"));
        else for (const item of command.items) (queue as AsyncQueue<SchemaValueJson>).push(item);
        return true;
      }
      case "endInput": {
        const queue = inputs.get(command.input);
        if (queue === undefined) throw new Error(`no input named ${JSON.stringify(command.input)}`);
        queue.end();
        return true;
      }
      case "read":
        read(command.stream, command.count ?? Number.POSITIVE_INFINITY, command.digest === true);
        return true;
      case "cancel": {
        if (call === undefined) throw new Error("cancel before start");
        const outcome = await call.cancel(command.reason);
        emit({ type: "cancelled", delivered: outcome.kind === "delivered" });
        return true;
      }
      case "close":
        return false;
    }
  };

  emit({ type: "ready", implementation: "@golem-stream/client" });
  const lines = createInterface({ input: options.input ?? process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let keepGoing = true;
    try {
      const command = JSON.parse(line) as AdapterCommand;
      // `cancel` waits for the server; other commands keep flowing meanwhile.
      if (command.type === "cancel") void handle(command).catch((error: unknown) => emit({ type: "commandError", message: String(error) }));
      else keepGoing = await handle(command);
    } catch (error) {
      emit({ type: "commandError", message: error instanceof Error ? error.message : String(error) });
    }
    if (!keepGoing) break;
  }
  lines.close();
  call?.detach();
}
