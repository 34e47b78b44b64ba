/**
 * What a start must satisfy before anything is stored (sections 5.1, 10):
 * the catalogue has its agent type and method, its constructor parameters
 * and configuration are valid, and the authorizer allows it, checked in an
 * order that tells a refused caller nothing. Also the start's descriptor
 * (what an exact replay of it must repeat) and its agent identity.
 */
import { canonicalValue, catalogueGraph, decodeValue, digestOf, type SchemaGraph } from "../values.js";
import type { DecodedValue } from "@golem-stream/schema-value";
import { ProtocolError, type ConfigEntry, type InvocationStart, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import type { AgentHost, AgentTypeDescriptor, MethodDescriptor } from "../agent-host.js";
import type { AuthorizationRequest, Authorizer, Principal } from "../options.js";
import { authorizeOrThrow } from "./caller-checks.js";

/** Everything about a start that does not depend on the store. */
export interface ValidatedStart {
  readonly type: AgentTypeDescriptor;
  readonly method: MethodDescriptor;
  readonly agentIdentity: string;
  readonly constructorParameters: SchemaValueJson;
}

/**
 * Catalogue lookup, constructor validation, authorization, method lookup,
 * config validation, in that order: the authorizer sees the agent identity,
 * and a caller who may not invoke learns nothing about methods. When the
 * lookup or the constructor fails, the authorizer is asked first without an
 * identity, so a caller it refuses cannot tell a missing agent type, or its
 * constructor's schema, from a refusal.
 */
export async function validateStart(
  host: AgentHost,
  authorize: Authorizer,
  message: InvocationStart,
  caller: Principal,
): Promise<ValidatedStart> {
  const selector = message.selector;
  const request: AuthorizationRequest = {
    caller,
    operation: "start",
    application: selector.application,
    environment: selector.environment,
    agentType: selector.agentType,
    method: selector.method,
  };
  let type: AgentTypeDescriptor;
  let constructorParameters: SchemaValueJson;
  try {
    const found = host.agentTypes(selector.application, selector.environment)?.find((t) => t.name === selector.agentType);
    if (found === undefined) throw new ProtocolError("not-found", "the application, environment or agent type does not exist");
    type = found;
    const constructor = decodeValue(
      selector.constructorParameters as unknown as JsonValue,
      catalogueGraph(type.constructorParameters),
      "forbidden",
      "selector.constructorParameters",
    );
    constructorParameters = JSON.parse(canonicalValue(constructor)) as SchemaValueJson;
  } catch (error) {
    await authorizeOrThrow(authorize, request);
    throw error;
  }
  const agentIdentity = agentIdentityOf(constructorParameters, selector.phantomId);
  await authorizeOrThrow(authorize, { ...request, agentIdentity });
  const method = type.methods.find((m) => m.name === selector.method);
  if (method === undefined) throw new ProtocolError("not-found", "the agent type has no such method");
  checkConfig(type, message.config);
  return { type, method, agentIdentity, constructorParameters };
}

/** A start's descriptor: what an exact replay of it must repeat (section 9). */
export interface StartDescriptor {
  /** The attempt's descriptor digest. */
  readonly digest: string;
  /** The method parameters as decoded for the digest, under `graph`; undefined when they were not. */
  readonly parameters: { readonly graph: SchemaGraph; readonly decoded: DecodedValue } | undefined;
}

/**
 * "Equality is semantic after strict decoding and canonical SchemaValue
 * normalization", so the constructor and method parameters count as the canonical text of their
 * decoded values (`0.1` and `0.10000000149011612` are one f32, `.5Z` and `.500Z` one datetime),
 * where the catalogue has the agent type and method and the value decodes. Otherwise the start is
 * refused anyway, and its values count as sent. The decoded method parameters are kept, for the
 * start to use rather than decode them again.
 */
export function startDescriptor(host: AgentHost, message: InvocationStart): StartDescriptor {
  const selector = message.selector;
  const type = host.agentTypes(selector.application, selector.environment)?.find((t) => t.name === selector.agentType);
  const method = type?.methods.find((m) => m.name === selector.method);
  const constructorParameters = selector.constructorParameters as unknown as JsonValue;
  const methodParameters = message.methodParameters as unknown as JsonValue;
  const graph = method === undefined ? undefined : catalogueGraph(method.parameters);
  const decoded = graph === undefined ? undefined : decodedOrUndefined(methodParameters, graph, "provisional");
  const digest = digestOf({
    attemptId: message.attemptId,
    config: message.config as unknown as JsonValue,
    idempotencyKey: message.idempotencyKey,
    methodParameters: canonicalJsonOf(decoded, methodParameters),
    selector: {
      ...(selector as unknown as Record<string, JsonValue>),
      constructorParameters: canonicalJsonOf(
        type === undefined ? undefined : decodedOrUndefined(constructorParameters, catalogueGraph(type.constructorParameters), "forbidden"),
        constructorParameters,
      ),
    },
  });
  return { digest, parameters: graph === undefined || decoded === undefined ? undefined : { graph, decoded } };
}

/** `value` decoded under `graph`, or undefined when it does not decode. */
function decodedOrUndefined(value: JsonValue, graph: SchemaGraph, streams: "provisional" | "forbidden"): DecodedValue | undefined {
  try {
    return decodeValue(value, graph, streams, "value");
  } catch {
    return undefined;
  }
}

/** A decoded value's canonical form as JSON, or the value as `sent` when it was not decoded. */
function canonicalJsonOf(decoded: DecodedValue | undefined, sent: JsonValue): JsonValue {
  return decoded === undefined ? sent : (JSON.parse(canonicalValue(decoded)) as JsonValue);
}

/** Decisions section 4, field 20: SHA-256 of the canonical constructor parameters and phantom id. */
export function agentIdentityOf(constructorParameters: SchemaValueJson, phantomId: string | undefined): string {
  const identity: Record<string, JsonValue> = { constructorParameters: constructorParameters as unknown as JsonValue };
  if (phantomId !== undefined) identity["phantomId"] = phantomId;
  return digestOf(identity);
}

/** Configuration entries must be declared by the agent type and accepted by it; paths are unique. */
function checkConfig(type: AgentTypeDescriptor, config: readonly ConfigEntry[]): void {
  const seen = new Set<string>();
  config.forEach((entry, index) => {
    const key = JSON.stringify(entry.path);
    if (seen.has(key)) throw new ProtocolError("validation-error", `config[${index}] repeats a path`, { path: `config[${index}]` });
    seen.add(key);
    const declaration = type.config.find((d) => d.path.length === entry.path.length && d.path.every((s, i) => s === entry.path[i]));
    if (declaration === undefined) {
      throw new ProtocolError("validation-error", `config[${index}] is not a configuration entry of this agent type`, {
        path: `config[${index}]`,
      });
    }
    if (declaration.accepts !== undefined && !declaration.accepts(entry.value)) {
      throw new ProtocolError("validation-error", `config[${index}] has a value this agent type does not accept`, {
        path: `config[${index}]`,
      });
    }
  });
}
