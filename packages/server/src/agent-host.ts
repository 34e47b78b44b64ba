/**
 * The agent host: the catalogue of agent types a server exposes and the code
 * that runs their methods. Method implementations are ordinary async
 * TypeScript: they read input streams as async iterables and return values,
 * with output streams created by `context.output(source)`.
 *
 * Values cross this boundary in their native SchemaValue JSON form
 * (`{kind, value}`), already validated against the method's schemas; what a
 * method returns is validated again before anything is recorded or sent.
 */
import type { ConfigDeclaration, Durability } from "@golem-stream/contract";
import type { ConfigEntry, JsonValue, SchemaGraphJson, SchemaValueJson } from "@golem-stream/wire";
import { decodeSchemaGraph } from "@golem-stream/schema-value";
import { checkSelectorName } from "./admission/token-budget.js";

/** A declared configuration entry of an agent type (protocol section 4.2); one type with the contracts'. */
export type { ConfigDeclaration };
/** What happens to a running invocation when its server is lost (docs/durable-execution.md); one type with the contracts'. */
export type { Durability };

export interface MethodDescriptor {
  readonly name: string;
  /** Graph whose root is the record of the method's parameters. */
  readonly parameters: SchemaGraphJson;
  /** Graph rooted at the result type; omitted for a method without a result. */
  readonly result?: SchemaGraphJson;
  /** `"replay"`: re-run after a restart instead of failing (docs/durable-execution.md). Without it, the agent type's. */
  readonly durability?: Durability;
}

export interface AgentTypeDescriptor {
  readonly name: string;
  /** Graph whose root is the record of the constructor parameters. */
  readonly constructorParameters: SchemaGraphJson;
  readonly methods: readonly MethodDescriptor[];
  readonly config: readonly ConfigDeclaration[];
  /** The durability of each method that declares none (default `"none"`). */
  readonly durability?: Durability;
}

/** The durability a method of `type` runs with: its own, else its agent type's, else `"none"`. */
export function durabilityOf(type: AgentTypeDescriptor, method: MethodDescriptor): Durability {
  return method.durability ?? type.durability ?? "none";
}

/** One binary stream item (`stream<binary>`). */
export interface BinaryItem {
  readonly bytes: Uint8Array;
  readonly mimeType?: string;
}

/**
 * What an output stream yields: a SchemaValue for ordinary elements, byte
 * chunks of any size for `stream<u8>` (the server packs them), a
 * `BinaryItem` or bare bytes for `stream<binary>`.
 */
export type OutputItem = SchemaValueJson | Uint8Array | BinaryItem;

/**
 * A push-style producer. `write` validates the item and resolves when
 * backpressure allows another; the item is committed before any client
 * sees it.
 */
export interface OutputWriter {
  write(item: OutputItem): Promise<void>;
  /** Aborted when the client cancels the stream or the invocation fails. */
  readonly signal: AbortSignal;
}

export type OutputSource = AsyncIterable<OutputItem> | Iterable<OutputItem> | ((writer: OutputWriter) => Promise<void>);

export interface InvocationContext {
  readonly application: string;
  readonly environment: string;
  readonly agentType: string;
  readonly method: string;
  readonly constructorParameters: SchemaValueJson;
  /** Method parameters; stream leaves carry their stable stream tokens. */
  readonly parameters: SchemaValueJson;
  readonly config: readonly ConfigEntry[];
  /** Aborted when the invocation fails or the server shuts down. */
  readonly signal: AbortSignal;
  /** The items of an input stream of any non-binary element type. */
  inputValues(stream: JsonValue | undefined): AsyncIterable<SchemaValueJson>;
  /** The bytes of a `stream<u8>` input, in the chunks the client sent. */
  inputBytes(stream: JsonValue | undefined): AsyncIterable<Uint8Array>;
  /** The items of a `stream<binary>` input. */
  inputBlobs(stream: JsonValue | undefined): AsyncIterable<BinaryItem>;
  /**
   * Declares an output stream and returns the stream leaf to place in the
   * result (or in an item of another output stream). The source starts
   * when the value that exposes it has been recorded.
   */
  output(source: OutputSource): SchemaValueJson;
  /**
   * Runs `fn` once and journals its outcome (docs/durable-execution.md): its
   * result as JSON, or its error's message, is stored before this resolves,
   * and a re-run of a replayable method gets the stored outcome back without
   * calling `fn`. Resolves to the result as JSON gives it back (the same on
   * the first run as on a re-run); rejects with an `Error` of the stored
   * name and message. At-least-once for the effect, exactly-once for the
   * journaled result. In a method that is not replayable it only runs `fn`.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** `Date.now()`, journaled: a re-run gets the same time. */
  now(): Promise<number>;
  /** `Math.random()`, journaled: a re-run gets the same number. */
  random(): Promise<number>;
  /** How many times this invocation's method has been started: 1, then one more on each re-run. */
  readonly attempt: number;
}

/** Marks an `InputCancelledError` of any copy of this package (a registry-wide symbol). */
const INPUT_CANCELLED_ERROR: unique symbol = Symbol.for("@golem-stream/server:InputCancelledError");

/**
 * Thrown by an input iterator when the client cancelled that input.
 * `instanceof` recognises it in code that imports another copy of this
 * package (a `serve --agents` module's own).
 */
export class InputCancelledError extends Error {
  override readonly name = "InputCancelledError";
  readonly [INPUT_CANCELLED_ERROR] = true;

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as { [INPUT_CANCELLED_ERROR]?: unknown })[INPUT_CANCELLED_ERROR] === true;
  }

  constructor(readonly reason: string) {
    super(`input stream cancelled: ${reason}`);
  }
}

/** Marks a `PublicProducerError` of any copy of this package (a registry-wide symbol). */
const PUBLIC_PRODUCER_ERROR: unique symbol = Symbol.for("@golem-stream/server:PublicProducerError");

/**
 * An error whose message is safe to show the client as the outcome message
 * of a failed output stream. Any other error is reported as "producer failed".
 *
 * `instanceof` recognises one thrown by another copy of this package too: a
 * `serve --agents` module imports `@golem-stream/server` from its own
 * project, which need not be the copy the CLI runs.
 */
export class PublicProducerError extends Error {
  override readonly name = "PublicProducerError";
  readonly [PUBLIC_PRODUCER_ERROR] = true;

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as { [PUBLIC_PRODUCER_ERROR]?: unknown })[PUBLIC_PRODUCER_ERROR] === true;
  }
}

export interface AgentHost {
  /** The agent types of an application environment, or undefined if it does not exist. */
  agentTypes(application: string, environment: string): readonly AgentTypeDescriptor[] | undefined;
  /**
   * Every application environment it serves, for telling a caller who asked for another one
   * which there are (the discovery endpoint's `not-found`, each named only if the caller may
   * read it). Optional: a host of your own that cannot list them leaves it out.
   */
  environments?(): readonly ApplicationEnvironment[];
  /** Runs a method; resolves to its result value (undefined for a method without a result). */
  invoke(context: InvocationContext): Promise<SchemaValueJson | undefined>;
}

/** An application environment a host serves. */
export interface ApplicationEnvironment {
  /** The application's name, as a start or discovery names it. */
  readonly application: string;
  /** One of its environments (`default`, `prod`, …). */
  readonly environment: string;
}

export type MethodImplementation = (context: InvocationContext) => Promise<SchemaValueJson | undefined>;

export interface AgentTypeDefinition extends AgentTypeDescriptor {
  readonly implementations: Readonly<Record<string, MethodImplementation>>;
}

/**
 * An `AgentHost` over a fixed set of definitions: `{ application: { environment: [types] } }`.
 * Every application, environment, agent type and method name is checked here
 * (1..128 UTF-8 bytes, `MAX_SELECTOR_NAME_BYTES`): the names are written into
 * every session token, and a longer one could make every start of it fail
 * `limit-exceeded`. A bad name throws a `RangeError` (a `TypeError` when it is
 * not a non-empty well-formed string) naming where it is.
 */
export class StaticAgentHost implements AgentHost {
  readonly #applications: ReadonlyMap<string, ReadonlyMap<string, readonly AgentTypeDefinition[]>>;

  constructor(applications: Readonly<Record<string, Readonly<Record<string, readonly AgentTypeDefinition[]>>>>) {
    const byApplication = new Map<string, Map<string, readonly AgentTypeDefinition[]>>();
    for (const [application, environments] of Object.entries(applications)) {
      checkName(application, "application", "");
      for (const [environment, types] of Object.entries(environments)) {
        const where = `application ${quoted(application)}: `;
        checkName(environment, "environment", where);
        for (const type of types) {
          checkName(type.name, "agent type", `${where}environment ${quoted(environment)}: `);
          checkConstructor(type, `${where}environment ${quoted(environment)}: agent type ${quoted(type.name)}`);
          for (const method of type.methods)
            checkName(method.name, "method", `${where}environment ${quoted(environment)}: agent type ${quoted(type.name)}: `);
        }
      }
      byApplication.set(application, new Map(Object.entries(environments)));
    }
    this.#applications = byApplication;
  }

  agentTypes(application: string, environment: string): readonly AgentTypeDescriptor[] | undefined {
    return this.#applications.get(application)?.get(environment);
  }

  environments(): readonly ApplicationEnvironment[] {
    return [...this.#applications].flatMap(([application, environments]) =>
      [...environments.keys()].map((environment) => ({ application, environment })),
    );
  }

  invoke(context: InvocationContext): Promise<SchemaValueJson | undefined> {
    const types = this.#applications.get(context.application)?.get(context.environment) ?? [];
    const implementations = types.find((type) => type.name === context.agentType)?.implementations;
    const implementation =
      implementations !== undefined && Object.hasOwn(implementations, context.method) ? implementations[context.method] : undefined;
    if (implementation === undefined) return Promise.reject(new Error("method has no implementation"));
    return implementation(context);
  }
}

/**
 * Protocol 4.1: "Constructor parameters MUST NOT contain streams". A type whose constructor holds
 * one would be served in the catalogue and could never be invoked: refused here, at start-up.
 */
function checkConstructor(type: AgentTypeDescriptor, where: string): void {
  try {
    decodeSchemaGraph(type.constructorParameters, { streams: "forbidden" });
  } catch (cause) {
    throw new TypeError(
      `StaticAgentHost: ${where}: constructor parameters: ${cause instanceof Error ? cause.message : "not a valid schema graph"}`,
      { cause },
    );
  }
}

function checkName(name: unknown, what: string, where: string): void {
  checkSelectorName(name, `StaticAgentHost: ${where}${what} name${typeof name === "string" && name !== "" ? ` ${quoted(name)}` : ""}`);
}

/** A name in a message: JSON-quoted, cut short so a name of kilobytes does not flood the log. */
function quoted(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}
