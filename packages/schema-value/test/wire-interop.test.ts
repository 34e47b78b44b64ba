/**
 * The shapes other layers exchange with this package: wire's message model
 * carries `SchemaValueJson` / `SchemaGraphJson`, and decoded values must fit
 * back into it unchanged. Mostly compile-time; `tsc -p tsconfig.lint.json`
 * fails if a shape drifts.
 */
import { canonicalJson, type InvocationStart, type SchemaGraphJson, type SchemaValueJson } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, decodeSchemaValue, encodeSchemaValue, extractGraph, t, v } from "../src/index.js";

describe("interop with wire's message model", () => {
  const graph = decodeSchemaGraph(t.graph(t.record({ input: t.stream(t.string()) })));

  it("decodes methodParameters as a decoded message carries them", () => {
    const start: InvocationStart = {
      type: "invocationStart",
      attemptId: "ca7e5a82-2064-4c18-8359-806145c1562f",
      config: [],
      idempotencyKey: "k",
      methodParameters: {
        kind: "record",
        value: { fields: [{ kind: "stream", value: { provisionalRef: "0dff1c71-f12f-4bb1-996c-23d693bdc825" } }] },
      },
      selector: {
        agentType: "echo",
        application: "demo",
        constructorParameters: v.record(v.string("x")),
        environment: "default",
        method: "reverse",
      },
    };
    const decoded = decodeSchemaValue(start.methodParameters, graph, { streams: "provisional", path: "methodParameters" });
    expect(decoded.streams[0]?.coordinate).toBe("/value/fields/0");
  });

  it("puts decoded values and extracted graphs into messages as they are", () => {
    const decoded = decodeSchemaValue(v.record(v.streamToken("tok")), graph, { streams: "stable" }).value;
    const value: SchemaValueJson = decoded; // the message field type
    const graphJson: SchemaGraphJson = extractGraph(graph, graph.root).toJSON();
    // A decoded value is itself JSON, so canonical text of the envelope embeds its canonical text.
    const text = canonicalJson({ kind: "value", graph: graphJson, value: decoded });
    expect(text).toContain(encodeSchemaValue(decodeSchemaValue(value, graph, { streams: "stable" }).value));
  });
});
