/**
 * @golem-stream/conformance — a black-box conformance kit for the Golem
 * Stream Session Public Protocol v1: the server suite and the client suite
 * as a library (the `golem-stream-conformance` command wraps both) and the
 * protocol's vector files. The adapter for @golem-stream/client is at
 * `@golem-stream/conformance/client-adapter`.
 */
export {
  runServerSuite,
  validateSelectors,
  type RunOptions,
  type SuiteReport,
  type CheckResult,
  type Status,
  type BaseReport,
} from "./runner.js";
export { serverChecks } from "./suite.js";
export { SECTIONS, Mismatch, type Check, type Section, type ServerSetting } from "./check.js";
export { SuiteContext, type SuiteOptions } from "./context.js";
export type { ProbeOptions, ProbeResult } from "./http-probe.js";
export { traceViolations, type TraceOptions } from "./invariants.js";
export { formatTextReport } from "./report/text.js";
export { formatJsonReport } from "./report/json.js";
export { formatJunitReport } from "./report/junit.js";
export { vectorsDir, loadVectors, malformedBytes, VECTOR_FILES, type VectorFile, type MalformedCase } from "./vectors.js";
export { runClientSuite, type ClientRunOptions, type ClientSuiteReport } from "./client/runner.js";
export { clientScenarios } from "./client/suite.js";
export { CLIENT_SECTIONS, defineScenarios, type Scenario, type ScenarioSpec, type ClientSection } from "./client/scenario.js";
export { AdapterProcess } from "./client/adapter-process.js";
export { ScriptTokens, type CursorPosition } from "./client/script-tokens.js";
export {
  ScriptedSession,
  ScriptedOutput,
  ScriptedInput,
  nextAttach,
  provisionalRefOf,
  inputsOn,
  type Attach,
  type InputSeen,
} from "./client/session-script.js";
export { ClientContext, CONFORMANCE_TOKEN, type ClientSuiteOptions, type StartSpec, type Outcome } from "./client/context.js";
export { ScriptedServer, type ScriptedPeer, type Script, type UpgradeRequest, type Refusal } from "./client/scripted-server.js";
export type {
  AdapterCommand,
  AdapterEvent,
  StartCommand,
  AttachCommand,
  FeedCommand,
  ReadCommand,
  CancelCommand,
  EndInputCommand,
  CloseCommand,
  StreamEndOutcome,
  ErrorCategory,
  InputElement,
} from "./client/adapter-protocol.js";
export { ERROR_CATEGORIES } from "./client/adapter-protocol.js";
export { Connection, type Closed, type ConnectOptions, type WaitBound } from "./connection.js";
export type { RunnableCheck } from "./run-checks.js";
export type { Part } from "./vectors.js";
// The protocol's own types appear in the scripted server's and the checks' signatures: a consumer
// imports them from here, since a strict node_modules layout hides this package's dependencies.
export type * from "@golem-stream/wire";
export type { CursorEvent } from "@golem-stream/tokens";
