/**
 * The `InvocationContext` a method implementation receives: its parameters,
 * readers for its input streams and `output()` to declare output streams.
 * Kept apart from the session so the agent-facing surface is easy to read.
 */
import type { ConfigEntry, JsonValue, SchemaValueJson } from "@golem-stream/wire";
import type { InvocationContext, OutputSource } from "../agent-host.js";
import type { SessionRecord } from "../store/session-store.js";
import type { InputItem, StreamState } from "./stream-state.js";
import { mapAsyncIterable } from "./mapped-iterable.js";
import type { Journal } from "./journal.js";

export interface InvocationInput {
  readonly constructorParameters: SchemaValueJson;
  readonly parameters: SchemaValueJson;
  readonly config: readonly ConfigEntry[];
}

export interface ContextBindings {
  /** The stream a stable stream token names, if any. */
  inputStream(token: string): StreamState | undefined;
  /** Registers an output source and returns the placeholder reference that stands for it. */
  declareOutput(source: OutputSource): string;
  /** This run's journal (`step`, `now`, `random`). */
  readonly journal: Journal;
  /** This run's number: 1, then one more per re-run. */
  readonly attempt: number;
}

export function createInvocationContext(
  record: SessionRecord,
  input: InvocationInput,
  signal: AbortSignal,
  bindings: ContextBindings,
): InvocationContext {
  const inputOf = (node: JsonValue | undefined, kind: "value" | "u8" | "binary"): AsyncIterable<InputItem> => {
    const token =
      node !== null && typeof node === "object" && !Array.isArray(node) && node["kind"] === "stream"
        ? (node["value"] as { streamToken?: unknown } | null)?.streamToken
        : undefined;
    const stream = typeof token === "string" ? bindings.inputStream(token) : undefined;
    if (stream === undefined || stream.direction !== "input") throw new TypeError("not an input stream of this invocation");
    if (stream.elementKind !== kind) throw new TypeError(`this input stream carries ${stream.elementKind} items`);
    // An input that was already terminal when the invocation started has nothing to read.
    return stream.queue === undefined ? empty() : stream.queue.consume();
  };
  return {
    application: record.application,
    environment: record.environment,
    agentType: record.agentType,
    method: record.method,
    constructorParameters: input.constructorParameters,
    parameters: input.parameters,
    config: input.config,
    signal,
    inputValues: (node) => mapAsyncIterable(inputOf(node, "value"), (item) => (item.kind === "value" ? item.value : wrongKind(item))),
    inputBytes: (node) => mapAsyncIterable(inputOf(node, "u8"), (item) => (item.kind === "bytes" ? item.bytes : wrongKind(item))),
    inputBlobs: (node) => mapAsyncIterable(inputOf(node, "binary"), (item) => (item.kind === "blob" ? item.blob : wrongKind(item))),
    output: (source) => ({ kind: "stream", value: { provisionalRef: bindings.declareOutput(source) } }),
    step: (name, fn) => bindings.journal.step(name, fn),
    now: () => bindings.journal.step("now", () => Date.now()),
    random: () => bindings.journal.step("random", () => Math.random()),
    attempt: bindings.attempt,
  };
}

async function* empty(): AsyncGenerator<InputItem> {}

/** `inputOf` checked the stream's element kind: an item of another kind is a bug here, never skipped silently. */
function wrongKind(item: InputItem): never {
  throw new TypeError(`an input stream yielded a ${item.kind} item where its element kind allows none`);
}
