/**
 * @golem-stream/contract — typed agent contracts. Define an agent type once:
 *
 *   const greeter = defineAgentType({
 *     name: "greeter",
 *     constructor: t.record({ name: t.string() }),
 *     methods: { greet: { params: t.record({ times: t.u32() }), result: t.stream(t.string()) } },
 *   });
 *
 * then `implement(greeter, {...})` on the server (`@golem-stream/server`) and
 * `typedAgent(client, greeter, {...})` on the client (`@golem-stream/client`).
 * This package depends on `@golem-stream/schema-value` only.
 */
export {
  defineAgentType,
  type AgentContract,
  type AnyAgentContract,
  type AgentTypeSpec,
  type AgentTypeGraphs,
  type ConfigDeclaration,
  type Durability,
  type MethodGraphs,
  type MethodName,
  type MethodSpec,
  type RecordSchema,
  type ResultSchema,
} from "./contract.js";
export { type ConstructorArgs, type MethodParams, type MethodResult } from "./js-types.js";
export { contractDifferences, assertContractMatches, resultDifference, type CatalogueAgentType, type GraphShape } from "./compare.js";
export { ContractError, CONTRACT_ERROR_CODES, type ContractErrorCode } from "./errors.js";
// The builders and type machinery contracts are written with, so one import suffices.
export { t, type JsOf, type JsStreams, type StreamRefs, type MapStream, type SchemaType } from "@golem-stream/schema-value";
