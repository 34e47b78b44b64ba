/**
 * @golem-stream/conformance — a black-box conformance kit for the Golem
 * Stream Session Public Protocol v1: the server suite as a library (the
 * `golem-stream-conformance` command wraps it) and the protocol's vector files.
 */
export { runServerSuite, validateSelectors, type RunOptions, type SuiteReport, type CheckResult, type Status, type BaseReport } from "./runner.js";
export { serverChecks } from "./suite.js";
export { SECTIONS, Mismatch, type Check, type Section } from "./check.js";
export { SuiteContext, type SuiteOptions } from "./context.js";
export { traceViolations, type TraceOptions } from "./invariants.js";
export { formatTextReport } from "./report/text.js";
export { formatJsonReport } from "./report/json.js";
export { formatJunitReport } from "./report/junit.js";
export { vectorsDir, loadVectors, malformedBytes, VECTOR_FILES, type VectorFile, type MalformedCase } from "./vectors.js";
export { runClientSuite, type ClientRunOptions, type ClientSuiteReport } from "./client/runner.js";
export { clientScenarios } from "./client/suite.js";
export { CLIENT_SECTIONS, type Scenario, type ClientSection } from "./client/scenario.js";
export { ClientContext, type ClientSuiteOptions, type StartSpec } from "./client/context.js";
export { ScriptedServer, type ScriptedPeer, type Script } from "./client/scripted-server.js";
export type { AdapterCommand, AdapterEvent, StartCommand, FeedCommand, ReadCommand, CancelCommand, EndInputCommand, CloseCommand, StreamEndOutcome, ErrorCategory, InputElement } from "./client/adapter-protocol.js";
export { ERROR_CATEGORIES } from "./client/adapter-protocol.js";
