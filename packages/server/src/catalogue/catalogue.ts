/**
 * The catalogue folder owns what a server hosts: the catalogue of agent
 * types (this file), the checks it passes before a server starts on it, its
 * fingerprint, and the agent hosts built from it (several hosts as one, the
 * demo beside a user's catalogue).
 *
 * A catalogue: the agent types a server hosts, by application and
 * environment. It is what an `--agents` module exports by default and what
 * `startEmbeddedServer({ agents })` takes; `defineCatalogue` (check-catalogue.ts)
 * types it (and checks it) where it is written:
 *
 *   export default defineCatalogue({
 *     applications: { text: { default: [implement(wordsContract, { ... })] } },
 *   });
 *
 * Each agent type is an `AgentTypeDefinition`: what `implement(contract, …)`
 * returns, or one written by hand against the untyped host interface.
 */
import type { AgentTypeDefinition } from "../agent-host.js";

/** The agent types of one environment, in the order discovery lists them. */
export type EnvironmentAgentTypes = readonly AgentTypeDefinition[];

export interface Catalogue {
  /** `{ application: { environment: [agent types] } }`; at least one application with one agent type. */
  readonly applications: Readonly<Record<string, Readonly<Record<string, EnvironmentAgentTypes>>>>;
}
