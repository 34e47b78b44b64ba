/**
 * `@golem-stream/contract/codegen`: contracts as TypeScript source, from a
 * server's catalogue. A build-time tool, kept off the package's main entry so
 * an application that imports contracts never ships the generator.
 */
export {
  contractSource,
  DEFAULT_CONTRACT_IMPORT,
  UNTYPABLE_METHODS,
  type CatalogueEntry,
  type CatalogueGraph,
  type ContractSourceOptions,
  type GeneratedContracts,
  type OmittedMethod,
} from "./contract-source.js";
