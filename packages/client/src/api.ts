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
  Invocation,
  type InvocationResult,
  type InvocationEvents,
  type AcceptedEvent,
  type ReconnectingEvent,
  type CheckpointCallback,
} from "./invocation.js";
export { inputStream, InputStream, type BinaryBlob, type InputElementKind, type ParamNode, type ParamPayload } from "./input-stream.js";
export { OutputStream, type OutputChunk, type StreamOutcome } from "./output-stream.js";
export type { CancelOutcome } from "./cancel-delivery.js";
export type { ResumeState, AcceptedState, PendingStartState } from "./checkpoint.js";
export { ClientError, isClientError, CLIENT_ERROR_KINDS, type ClientErrorKind } from "./errors.js";
export { DEFAULT_RECONNECT_POLICY, reconnectDelay, type ReconnectPolicy } from "./reconnect-policy.js";
export type { Transport, Connection, ConnectionHandlers, ConnectRequest, CloseInfo } from "./transport.js";
export { webSocketTransport, type WebSocketTransportOptions, type WebSocketLike, type OpenWebSocket } from "./web-socket-transport.js";
export type { Source, ByteSource, BlobLike } from "./sources.js";
export { findStreamTokens, type StreamLeaf } from "./values.js";
