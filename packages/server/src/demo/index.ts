/**
 * @golem-stream/server/demo — the demo catalogue of decisions-v1 §7 as a host you can serve.
 *
 * `startEmbeddedServer` serves it by default, so most users never import this entry: it is for a
 * server of your own that hosts the demo beside its agents (`new CombinedAgentHost([...])`), and for
 * tests and benchmarks that call the demo's methods.
 */
export { createDemoHost } from "./host.js";
export {
  DEMO_APPLICATION,
  DEMO_ENVIRONMENT,
  DEMO_AGENT_TYPE,
  DEMO_MAX_BLOB_BYTES,
  DEMO_MAX_BLOBS,
  ECHO_CONSTRUCTOR,
  ECHO_METHODS,
  echoContract,
} from "./catalogue.js";
export { demoBlob, reverseScalars } from "./methods.js";
