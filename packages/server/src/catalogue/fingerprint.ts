/**
 * A catalogue's fingerprint: what every node of a cluster compares to know
 * that they serve the same agent types. It covers what clients see and
 * sessions store — application, environment, agent type and method names in
 * their order, every schema graph, the configuration paths — and nothing of
 * the implementations: changing a method's code keeps the fingerprint, while
 * changing a schema or adding a method changes it.
 *
 * The SHA-256 of the catalogue's canonical JSON (object members sorted, so
 * two catalogues written in another key order fingerprint alike), hex.
 */
import { sha256Hex } from "@golem-stream/tokens";
import { CATALOGUE_TEXT } from "./catalogue-text.js";
import { canonicalJson, type JsonValue } from "@golem-stream/wire";
import type { AgentTypeDescriptor } from "../agent-host.js";
import type { Catalogue } from "./catalogue.js";

export function catalogueFingerprint(catalogue: Catalogue): string {
  const applications: Record<string, Record<string, JsonValue>> = {};
  for (const [application, environments] of Object.entries(catalogue.applications)) {
    const byEnvironment: Record<string, JsonValue> = {};
    for (const [environment, types] of Object.entries(environments)) byEnvironment[environment] = types.map(describe);
    applications[application] = byEnvironment;
  }
  return sha256Hex(canonicalJson(applications, CATALOGUE_TEXT));
}

/** An agent type as discovery serves it. */
function describe(type: AgentTypeDescriptor): JsonValue {
  return {
    name: type.name,
    constructorParameters: type.constructorParameters as unknown as JsonValue,
    methods: type.methods.map((method) => ({
      name: method.name,
      parameters: method.parameters as unknown as JsonValue,
      ...(method.result === undefined ? {} : { result: method.result as unknown as JsonValue }),
    })),
    config: type.config.map((entry) => ({ path: [...entry.path] })),
  };
}
