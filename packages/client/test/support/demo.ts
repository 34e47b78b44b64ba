/** Helpers for calling the embedded server's demo catalogue (decisions §7). */
import type { SchemaValueJson } from "@golem-stream/wire";
import type { Invocation, OutputStream, ParamNode } from "../../src/index.js";

export const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "loopback" }] } } as SchemaValueJson,
};

export const record = (...fields: ParamNode[]): ParamNode => ({ kind: "record", value: { fields } });
export { collect, fieldsOf, randomChunks, sha256, u32 } from "@golem-stream/test-support";

export async function firstStream(call: Invocation): Promise<OutputStream> {
  const result = await call.result;
  if (result.kind !== "value" || result.streams[0] === undefined) throw new Error("the result has no stream");
  return result.streams[0];
}
