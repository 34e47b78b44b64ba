/**
 * The demo catalogue (decisions-v1 section 7): application `demo`,
 * environment `default`, agent type `echo` with constructor
 * `record{name: string}`. The agent type is the `echoContract` of
 * `@golem-stream/contract/demo`, so clients can call it with the same types;
 * these exports are its SchemaGraph JSON, as the discovery endpoint serves it.
 */
import { DEMO_APPLICATION, DEMO_ENVIRONMENT, DEMO_MAX_BLOB_BYTES, DEMO_MAX_BLOBS, echoContract } from "@golem-stream/contract/demo";
import type { SchemaGraphJson } from "@golem-stream/wire";
import type { MethodDescriptor } from "../agent-host.js";

export { DEMO_APPLICATION, DEMO_ENVIRONMENT, DEMO_MAX_BLOB_BYTES, DEMO_MAX_BLOBS, echoContract };
export const DEMO_AGENT_TYPE = echoContract.name;

export const ECHO_CONSTRUCTOR: SchemaGraphJson = echoContract.graphs.constructorParameters;

export const ECHO_METHODS: readonly MethodDescriptor[] = echoContract.graphs.methods;
