/**
 * Everything both builds export except `createClient` and `wsTransport`,
 * whose default transport and dependency on `ws` differ: the Node build
 * (index.ts) and the browser build (browser.ts) each add their own.
 */
export {
  sessionUrl,
  DEFAULT_ACCEPTANCE_TIMEOUT_MS,
  type Client,
  type ClientOptions,
  type InvokeOptions,
  type AttachOptions,
  type Agent,
  type AgentOptions,
  type AgentInvokeOptions,
} from "./client.js";
export type { AgentTypeSchema, MethodSchema } from "./discovery.js";
export { jsToParams } from "./typed-agent.js";
export {
  typedAgent,
  TypedCall,
  type AgentSource,
  type ConnectOptions,
  type ContractConnectOptions,
  type TypedAgent,
  type CallParams,
  type CallResult,
} from "./contract-agent.js";
export type { TypedOutput, SourceStreams, OutputStreams, SourceFor, OutputElement } from "./contract-streams.js";
// Contracts are defined with this package's dependency; re-exported so a client needs one import.
export { defineAgentType, ContractError, CONTRACT_ERROR_CODES, t } from "@golem-stream/contract";
export type * from "@golem-stream/contract";
export {
  Invocation,
  type InvocationResult,
  type InvocationEvents,
  type AcceptedEvent,
  type ReconnectingEvent,
  type CheckpointCallback,
} from "./invocation.js";
export { inputStream, InputStream, type BinaryBlob, type InputElementKind, type ParamNode, type ParamPayload } from "./input-stream.js";
export { OutputStream, type OutputChunk, type StreamOutcome } from "./output-stream.js";
export type { ElementSchema } from "./schema.js";
export type { CancelOutcome } from "./cancel-delivery.js";
export type { ResumeState, AcceptedState, PendingStartState } from "./checkpoint.js";
export { ClientError, isClientError, CLIENT_ERROR_KINDS, type ClientErrorKind, type ClientErrorOptions } from "./errors.js";
export { DEFAULT_RECONNECT_POLICY, reconnectDelay, type ReconnectPolicy } from "./reconnect-policy.js";
export type { Transport, Connection, ConnectionHandlers, ConnectRequest, CloseInfo, CatalogueRequestInit } from "./transport.js";
export { webSocketTransport, type WebSocketTransportOptions, type WebSocketLike, type OpenWebSocket } from "./web-socket-transport.js";
export type { Source, ByteSource, BlobLike } from "./sources.js";
export { findStreamTokens, type StreamLeaf } from "./values.js";
// Every protocol and schema type that appears in the client's signatures (SchemaValueJson in
// invoke's parameters, the messages a Transport carries, the schema graph of a result), importable
// from the client itself: with a strict node_modules layout its dependencies are not importable.
// Where both layers or the client use one name, the one in the client's own signatures keeps it
// (the wire's SchemaGraphJson, a JSON object; the client's InvocationResult and StreamLeaf); the
// other is exported under a longer name.
export type * from "@golem-stream/wire";
export type * from "@golem-stream/schema-value";
export type { SchemaGraphJson, InvocationResult as InvocationResultMessage } from "@golem-stream/wire";
export type { SchemaGraphJson as TypedSchemaGraphJson, StreamLeaf as SchemaStreamLeaf } from "@golem-stream/schema-value";
