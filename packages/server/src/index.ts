/**
 * @golem-stream/server — the server side of Golem Stream Session v1.
 *
 * Quick start (demo catalogue, SQLite in `./data`, one bearer token):
 *
 *   const server = await startEmbeddedServer({ dataDir: "./data", tokens: ["secret"] });
 *   console.log(server.url); // ws://127.0.0.1:<port>
 *
 * Your own agents: `startEmbeddedServer({ agents: defineCatalogue({ applications:
 * { app: { env: [implement(contract, methods)] } } }), dataDir, tokens })`, or
 * implement `AgentHost` (or use `StaticAgentHost`) and call
 * `createSessionServer({ store, host, keyring, authenticator })`.
 *
 * Other entry points: `@golem-stream/server/store` (the store contract and helpers, for a store of
 * your own), `@golem-stream/server/demo` (the demo catalogue's host), `@golem-stream/server/testing`
 * (test clients, clocks and scenarios).
 */
export {
  startEmbeddedServer,
  loadOrCreateKeyring,
  loadOrCreatePrincipalSecret,
  PRINCIPAL_SECRET_FILE,
  type EmbeddedServer,
  type EmbeddedServerOptions,
} from "./embedded.js";
export type { Catalogue, EnvironmentAgentTypes } from "./catalogue/catalogue.js";
export { defineCatalogue } from "./catalogue/check-catalogue.js";
export { CatalogueError } from "./catalogue/catalogue-error.js";
export { checkAgents, checkCatalogue, isAgentHost } from "./catalogue/check-catalogue.js";
export { agentsHost, agentsFingerprint, type AgentsOptions } from "./catalogue/agents-host.js";
export { catalogueFingerprint } from "./catalogue/fingerprint.js";
export { CatalogueDriftError, type CatalogueDetails } from "./cluster/catalogue-check.js";
export { CombinedAgentHost } from "./catalogue/combined-host.js";
export {
  createSessionServer,
  type SessionServer,
  type BufferedBytes,
  type DrainOutcome,
  type SessionServerOptions,
  type ClusterOptions,
  type ListeningAddress,
  type ListenOptions,
  type PageHandler,
} from "./server.js";
export { TlsCertificateError, type TlsCredentials, type TlsErrorCode } from "./transport/tls-credentials.js";
export type { Timers, TimerHandle } from "./timers.js";
export type {
  ServerObserver,
  PartialObserver,
  AttachmentObserver,
  BackpressureReason,
  SilenceReason,
  PrincipalLimit,
  SessionIdentity,
  AttachEvent,
  AttachOperation,
  AttachmentEnd,
  RejectedOperation,
} from "./observability/server-observer.js";
// From the lower layers: the Keyring the options take, and the protocol types in this package's signatures.
export { Keyring, type KeyringInit, type KeyringKeyInit } from "@golem-stream/tokens";
export type {
  StreamDirection,
  ServerCancelReason,
  ClientCancelReason,
  ConfigEntry,
  SchemaGraphJson,
  SchemaValueJson,
  JsonValue,
  JsonObject,
  JsonArray,
  JsonPrimitive,
} from "@golem-stream/wire";
export type { BrowserOptions } from "./transport/browser-access.js";
export {
  StaticAgentHost,
  InputCancelledError,
  PublicProducerError,
  durabilityOf,
  type AgentHost,
  type ApplicationEnvironment,
  type AgentTypeDefinition,
  type AgentTypeDescriptor,
  type MethodDescriptor,
  type MethodImplementation,
  type ConfigDeclaration,
  type Durability,
  type InvocationContext,
  type OutputSource,
  type OutputItem,
  type OutputWriter,
  type BinaryItem,
} from "./agent-host.js";
export { recordField, payloadOf } from "./agent-values.js";
/** For hosts of your own: the bound StaticAgentHost checks names against, and the identity limit's ceiling. */
export { MAX_SELECTOR_NAME_BYTES, MAX_CALLER_IDENTITY_BYTES, checkSelectorName } from "./admission/token-budget.js";
export {
  DEFAULT_LIMITS,
  resolveLimits,
  silentLogger,
  type ServerLimits,
  type Principal,
  type Authenticator,
  type Authorizer,
  type AuthorizationRequest,
  type AuthorizedOperation,
  type Logger,
} from "./options.js";
export {
  createJwtAuth,
  JWT_ALGORITHMS,
  JWT_DEFAULTS,
  MAX_JWT_CHARS,
  type JwtAuth,
  type JwtAuthOptions,
  type JwtAuthorizationOptions,
  type JwtAlgorithm,
  type JwksRefreshOptions,
} from "./auth/jwt-auth.js";
// jose's types in those signatures: a consumer with a strict node_modules layout cannot import them from jose.
export type { JSONWebKeySet, JWK, JWTPayload } from "jose";
export { MAX_JWKS_FILE_BYTES } from "./auth/jwks-file.js";
export { MAX_JWKS_RESPONSE_BYTES } from "./auth/bounded-fetch.js";
export { checkTokenAccount, withStaticTokens, type Authentication, type GroupedToken, type StaticToken } from "./auth/static-tokens.js";
export { SqliteSessionStore, type SqliteSessionStoreOptions } from "./store/sqlite-store.js";
export { MemorySessionStore } from "./store/memory-store.js";
// The store types the options take; the whole contract, with the helpers for writing a store, is
// `@golem-stream/server/store`.
export type { SessionStore } from "./store/session-store.js";
export type { ClusterSessionStore } from "./store/cluster-store.js";
export {
  implement,
  type ContractContext,
  type ContractImplementation,
  type TypedMethod,
  type ParamsIn,
  type ResultOut,
} from "./contracts/implement.js";
// Contracts are defined with this package's dependency; re-exported so a server needs one import,
// with every contract and schema type their signatures use (wire names keep the wire's types, below).
export { defineAgentType, ContractError, CONTRACT_ERROR_CODES, t } from "@golem-stream/contract";
export type * from "@golem-stream/contract";
export type * from "@golem-stream/schema-value";
export type { SchemaGraphJson as TypedSchemaGraphJson, StreamLeaf as SchemaStreamLeaf } from "@golem-stream/schema-value";
export type { InputStreams, OutputStreams, InputElement, OutputElement, OutputSourceOf, TypedOutputWriter } from "./contracts/streams.js";
export { DISCOVERY_PATH } from "./transport/discovery.js";
export { METRICS_PATH, HEALTH_PATH, READY_PATH, type Readiness } from "./observability/http-endpoints.js";
export type { MetricsOptions } from "./observability/prometheus-metrics.js";
export { loggerFromPino, type PinoLike } from "./observability/pino-logger.js";
export { ATTACHMENT_SPAN, TRACER_NAME } from "./observability/tracing-observer.js";
