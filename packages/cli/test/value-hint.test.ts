/**
 * The hint a value that is not JSON gets: the type it is for and an example, bounded however
 * large the catalogue's type (a record of thousands of fields would otherwise print them all).
 */
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, t, type SchemaType } from "@golem-stream/schema-value";
import { ProtocolError } from "@golem-stream/wire";
import { notJsonError } from "../src/value-hint.js";

const notJson = new ProtocolError("validation-error", "argument 1 (x) is not valid JSON");

describe("notJsonError", () => {
  it("names the type and gives an example the schema takes", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ unit: t.string() })));
    expect(notJsonError(notJson, "kg", graph, graph.root, "argument 1 (x)", "shell").message).toBe(
      `argument 1 (x) is not valid JSON: expected a record{unit: string}, e.g. '{"unit":"kg"}'`,
    );
  });

  it("cuts a very wide type's signature short", () => {
    const fields: Record<string, SchemaType> = {};
    for (let i = 0; i < 5000; i++) fields[`field_number_${i}`] = t.string();
    const graph = decodeSchemaGraph(t.graph(t.record(fields)));
    const message = notJsonError(notJson, "x", graph, graph.root, "argument 1 (x)", "shell").message;
    expect(message).toMatch(/^argument 1 \(x\) is not valid JSON: expected a record\{field_number_0: string, .*…$/);
    expect(message.length).toBeLessThan(300);
  });
});
