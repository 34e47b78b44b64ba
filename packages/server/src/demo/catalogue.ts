/**
 * The demo catalogue (decisions-v1 section 7): application `demo`,
 * environment `default`, agent type `echo` with constructor
 * `record{name: string}`. Graphs are written out literally so they double as
 * examples of the SchemaGraph JSON form.
 */
import type { JsonObject, SchemaGraphJson } from "@golem-stream/wire";
import type { MethodDescriptor } from "../agent-host.js";

export const DEMO_APPLICATION = "demo";
export const DEMO_ENVIRONMENT = "default";
export const DEMO_AGENT_TYPE = "echo";

const string: JsonObject = { kind: "string", value: {} };
const u8: JsonObject = { kind: "u8", value: {} };
const u32: JsonObject = { kind: "u32", value: {} };
const u64: JsonObject = { kind: "u64", value: {} };
const binary: JsonObject = { kind: "binary", value: { restrictions: {} } };
const stream = (inner: JsonObject): JsonObject => ({ kind: "stream", value: { inner } });
const record = (...fields: [string, JsonObject][]): JsonObject => ({
  kind: "record",
  value: { fields: fields.map(([name, body]) => ({ name, body })) },
});
const graph = (root: JsonObject): SchemaGraphJson => ({ root });

export const ECHO_CONSTRUCTOR: SchemaGraphJson = graph(record(["name", string]));

export const ECHO_METHODS: readonly MethodDescriptor[] = [
  { name: "reverse", parameters: graph(record(["input", stream(string)])), result: graph(stream(string)) },
  {
    name: "digest",
    parameters: graph(record(["data", stream(u8)])),
    result: graph(record(["bytes", u64], ["sha256", string])),
  },
  { name: "count", parameters: graph(record(["to", u32], ["delayMs", u32])), result: graph(stream(u32)) },
  { name: "blobs", parameters: graph(record(["count", u32], ["size", u32])), result: graph(stream(binary)) },
  {
    name: "split",
    parameters: graph(record(["data", stream(u8)])),
    result: graph(record(["upper", stream(u8)], ["lines", stream(string)])),
  },
  {
    name: "groups",
    parameters: graph(record(["groups", u32], ["per", u32])),
    result: graph(stream(record(["name", string], ["items", stream(u32)]))),
  },
  { name: "fail", parameters: graph(record(["after", u32])), result: graph(stream(u32)) },
  // Beyond decisions-v1 section 7: a one-way string sink, so small-item
  // throughput can be measured without an output stream of the same size.
  {
    name: "tally",
    parameters: graph(record(["input", stream(string)])),
    result: graph(record(["items", u64], ["bytes", u64])),
  },
];
