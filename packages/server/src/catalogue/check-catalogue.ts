/**
 * The checks a catalogue passes before a server starts on it. A catalogue
 * usually comes from a module loaded at start-up (`serve --agents`), written
 * in JavaScript with nothing checking its shape: every part is checked here
 * as untrusted, so a mistake stops the start with one message naming where
 * it is, instead of a client meeting it at the first invocation.
 *
 * What is checked: the shape (applications → environments → agent types),
 * every name (1..128 UTF-8 bytes, as `StaticAgentHost` requires), every
 * schema graph (constructors and parameters are records, constructors hold
 * no stream), agent type names unique in an environment and method names in
 * an agent type, one implementation function per method and none without a
 * method, configuration declarations `{path: string[]}`.
 */
import { decodeSchemaGraph } from "@golem-stream/schema-value";
import type { JsonValue } from "@golem-stream/wire";
import type { AgentHost } from "../agent-host.js";
import { checkSelectorName } from "../admission/token-budget.js";
import type { Catalogue } from "./catalogue.js";
import { CatalogueError } from "./catalogue-error.js";
import { SpelledOutCatalogue } from "./spelled-out.js";

/** Whether `value` looks like an `AgentHost` (its two methods); a catalogue never has them. */
export function isAgentHost(value: unknown): value is AgentHost {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { agentTypes?: unknown }).agentTypes === "function" &&
    typeof (value as { invoke?: unknown }).invoke === "function"
  );
}

/**
 * Checks what a catalogue module exports by default (or `agents` of
 * `startEmbeddedServer`): an `AgentHost` is taken as it is (its catalogue is
 * its own business), anything else must be a catalogue that passes
 * `checkCatalogue`.
 */
export function checkAgents(value: unknown): Catalogue | AgentHost {
  if (isAgentHost(value)) return value;
  if (typeof value === "function") {
    throw new CatalogueError(
      "the catalogue is a function: give the catalogue itself (defineCatalogue({ applications: {...} })) or an AgentHost, not a function that makes one",
    );
  }
  return checkCatalogue(value);
}

/** Returns `value` as a `Catalogue` once every check passed; throws `CatalogueError` naming the first problem. */
export function checkCatalogue(value: unknown): Catalogue {
  if (!isPlainObject(value)) throw new CatalogueError(`the catalogue must be an object { applications: {...} }, not ${describe(value)}`);
  if (isAgentContract(value))
    throw new CatalogueError(
      `the catalogue is the contract of agent type ${contractName(value)}, not a catalogue: serve defineCatalogue({ applications: { <application>: { <environment>: [${implementHint(value)}] } } })`,
    );
  for (const key of Object.keys(value)) {
    if (key !== "applications")
      throw new CatalogueError(
        `the catalogue has an unknown field ${quoted(key)}: only "applications" (application → environment → agent types)`,
      );
  }
  const applications = value["applications"];
  if (applications === undefined)
    throw new CatalogueError('the catalogue has no "applications": { applications: { <application>: { <environment>: [agent types] } } }');
  if (!isPlainObject(applications))
    throw new CatalogueError(`"applications" must be an object of applications, not ${describe(applications)}`);
  const names = Object.keys(applications);
  if (names.length === 0) throw new CatalogueError("the catalogue has no application");
  const text = new SpelledOutCatalogue();
  for (const application of names) checkApplication(application, applications[application], text);
  return value as unknown as Catalogue;
}

function checkApplication(application: string, environments: unknown, text: SpelledOutCatalogue): void {
  const where = `application ${quoted(application)}`;
  checkName(application, where, "application name");
  if (!isPlainObject(environments)) throw new CatalogueError(`${where} must be an object of environments, not ${describe(environments)}`);
  const names = Object.keys(environments);
  if (names.length === 0) throw new CatalogueError(`${where} has no environment`);
  for (const environment of names) {
    const at = `${where}: environment ${quoted(environment)}`;
    checkName(environment, at, "environment name");
    checkEnvironment(environments[environment], at, text);
  }
}

function checkEnvironment(types: unknown, where: string, text: SpelledOutCatalogue): void {
  if (!Array.isArray(types)) throw new CatalogueError(`${where} must be a list of agent types, not ${describe(types)}`);
  if (types.length === 0) throw new CatalogueError(`${where} has no agent type`);
  const seen = new Set<string>();
  types.forEach((type: unknown, index) => {
    const name = isPlainObject(type) && typeof type["name"] === "string" ? type["name"] : undefined;
    const at = `${where}: ${name === undefined ? `agent type #${index + 1}` : `agent type ${quoted(name)}`}`;
    checkAgentType(type, at, text);
    if (seen.has(name as string)) throw new CatalogueError(`${at} is listed twice in the environment`);
    seen.add(name as string);
  });
}

function checkAgentType(type: unknown, where: string, text: SpelledOutCatalogue): void {
  if (!isPlainObject(type)) {
    throw new CatalogueError(
      `${where} must be an agent type definition (what implement(contract, methods) returns), not ${describe(type)}`,
    );
  }
  if (isAgentContract(type))
    throw new CatalogueError(
      `${where}: the catalogue holds the contract of agent type ${contractName(type)}, not an implementation: serve ${implementHint(type)}`,
    );
  checkName(type["name"], where, "name");
  checkGraph(type["constructorParameters"], `${where}: constructor parameters`, { record: true, streams: "forbidden" }, text);
  const methods = type["methods"];
  if (!Array.isArray(methods))
    throw new CatalogueError(`${where}: "methods" must be a list of {name, parameters, result?}, not ${describe(methods)}`);
  const implementations = type["implementations"];
  if (!isPlainObject(implementations))
    throw new CatalogueError(`${where}: "implementations" must be an object of functions by method name, not ${describe(implementations)}`);
  const declared = new Set<string>();
  methods.forEach((method: unknown, index) => {
    const name = isPlainObject(method) && typeof method["name"] === "string" ? method["name"] : undefined;
    const at = `${where}: ${name === undefined ? `method #${index + 1}` : `method ${quoted(name)}`}`;
    if (!isPlainObject(method)) throw new CatalogueError(`${at} must be {name, parameters, result?}, not ${describe(method)}`);
    checkName(method["name"], at, "name");
    if (declared.has(name as string)) throw new CatalogueError(`${at} is declared twice`);
    declared.add(name as string);
    checkGraph(method["parameters"], `${at}: parameters`, { record: true, streams: "allowed" }, text);
    if (method["result"] !== undefined) checkGraph(method["result"], `${at}: result`, { record: false, streams: "allowed" }, text);
    // Its own property: `toString` or `constructor` must not find the object's inherited ones.
    if (!Object.hasOwn(implementations, name as string) || typeof implementations[name as string] !== "function")
      throw new CatalogueError(`${at} has no implementation function`);
    checkDurability(method["durability"], at);
  });
  for (const name of Object.keys(implementations)) {
    if (!declared.has(name)) throw new CatalogueError(`${where}: implementation ${quoted(name)} is for no declared method`);
  }
  checkConfig(type["config"], where);
  checkDurability(type["durability"], where);
}

/** `durability`, where given, is one of the two (docs/durable-execution.md). */
function checkDurability(durability: unknown, where: string): void {
  if (durability === undefined || durability === "none" || durability === "replay") return;
  throw new CatalogueError(`${where}: "durability" must be "none" or "replay", not ${describe(durability)}`);
}

function checkConfig(config: unknown, where: string): void {
  const valid =
    Array.isArray(config) &&
    config.every(
      (entry: unknown) =>
        isPlainObject(entry) &&
        Array.isArray(entry["path"]) &&
        // Protocol 4.2: a non-empty array of non-empty strings.
        entry["path"].length > 0 &&
        (entry["path"] as unknown[]).every((part) => typeof part === "string" && part.length > 0) &&
        (entry["accepts"] === undefined || typeof entry["accepts"] === "function"),
    );
  if (!valid)
    throw new CatalogueError(
      `${where}: "config" must be a list of {path, accepts?}, each path a non-empty list of non-empty strings (an empty list when none)`,
    );
}

function checkGraph(
  graph: unknown,
  where: string,
  rules: { record: boolean; streams: "allowed" | "forbidden" },
  text: SpelledOutCatalogue,
): void {
  if (!isPlainObject(graph))
    throw new CatalogueError(`${where} must be a schema graph {root, defs?} (t.graph(...)), not ${describe(graph)}`);
  let root: string;
  try {
    const decoded = decodeSchemaGraph(graph as JsonValue, { streams: rules.streams });
    root = decoded.resolve(decoded.root).kind;
  } catch (cause) {
    throw new CatalogueError(`${where}: ${cause instanceof Error ? cause.message : "not a valid schema graph"}`, { cause });
  }
  if (rules.record && root !== "record") throw new CatalogueError(`${where} must be a record (t.record({...})), not ${root}`);
  text.add(graph, where);
}

function checkName(name: unknown, where: string, what: string): void {
  try {
    checkSelectorName(name, `${where}: ${what}`);
  } catch (cause) {
    throw new CatalogueError(cause instanceof Error ? cause.message : `${where}: bad ${what}`, { cause });
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Whether `value` is what `defineAgentType` (@golem-stream/contract) returns, the contract an
 * agent type is written against: its schema graphs, and no implementations (`implement` adds them).
 */
function isAgentContract(value: Record<string, unknown>): boolean {
  const graphs = value["graphs"];
  return (
    !Object.hasOwn(value, "implementations") &&
    isPlainObject(graphs) &&
    Array.isArray(graphs["methods"]) &&
    isPlainObject(graphs["constructorParameters"])
  );
}

function contractName(contract: Record<string, unknown>): string {
  const name = contract["name"];
  return typeof name === "string" ? quoted(name) : "(no name)";
}

/** `implement(contract, { sum: …, countdown: … })`: what to serve in a contract's place, with its methods. */
function implementHint(contract: Record<string, unknown>): string {
  const methods = (contract["graphs"] as { methods: unknown[] }).methods;
  const names = methods.map((method) => (isPlainObject(method) && typeof method["name"] === "string" ? method["name"] : undefined));
  const listed = names.filter((name): name is string => name !== undefined).slice(0, 8);
  const more = methods.length > listed.length ? ", …" : "";
  const keys = `${listed.map((name) => `${quotedKey(name)}: …`).join(", ")}${more}`;
  return `implement(contract, ${keys === "" ? "{}" : `{ ${keys} }`})`;
}

/** A method name as an object key in a hint: bare when it is an identifier, quoted otherwise. */
function quotedKey(name: string): string {
  return /^[A-Za-z_$][\w$]{0,39}$/.test(name) ? name : quoted(name);
}

/** What a wrong value is, in a message: its kind, never its content ("undefined", "a string", "an object"). */
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "a list";
  const kind = typeof value;
  return `${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind}`;
}

/** A name in a message: JSON-quoted, cut short so a name of kilobytes does not flood the log. */
function quoted(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

/**
 * Returns `catalogue` unchanged, typed, once it passed every check
 * `startEmbeddedServer` and `serve --agents` apply (names, schemas, one
 * implementation per method): a bad one throws `CatalogueError` here, where
 * the module that declares it is loaded.
 */
export function defineCatalogue<const C extends Catalogue>(catalogue: C): C {
  checkCatalogue(catalogue);
  return catalogue;
}
