/**
 * @golem-stream/conformance — a black-box conformance kit for the Golem
 * Stream Session Public Protocol v1: the server suite as a library (the
 * `golem-stream-conformance` command wraps it) and the protocol's vector files.
 */
export { runServerSuite, validateSelectors, type RunOptions, type SuiteReport, type CheckResult, type Status } from "./runner.js";
export { serverChecks } from "./suite.js";
export { SECTIONS, Mismatch, type Check, type Section } from "./check.js";
export { SuiteContext, type SuiteOptions } from "./context.js";
export { traceViolations, type TraceOptions } from "./invariants.js";
export { formatTextReport } from "./report/text.js";
export { formatJsonReport } from "./report/json.js";
export { formatJunitReport } from "./report/junit.js";
export { vectorsDir, loadVectors, malformedBytes, VECTOR_FILES, type VectorFile, type MalformedCase } from "./vectors.js";
