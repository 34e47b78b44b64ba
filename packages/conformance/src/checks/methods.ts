/**
 * The demo catalogue end to end (decisions section 7), one check per case of
 * demo-sessions.json, plus the message-log invariants of sections 6 and 8.
 */
import { randomUUID } from "node:crypto";
import type { InvocationStart, JsonValue, SchemaValueJson, ServerMessage, StreamMapping } from "@golem-stream/wire";
import { defineChecks, ensureEqual, type Check } from "../check.js";
import { ensureTrace } from "../context.js";
import { demoStart } from "../demo.js";
import { loadVectors } from "../vectors.js";

interface ExpectedOutput {
  readonly items?: JsonValue[];
  readonly bytesHex?: string;
  readonly blobs?: { bytesHex: string; mimeType?: string }[];
  readonly nested?: ExpectedOutput[];
  readonly outcome: JsonValue;
}

interface DemoCase {
  readonly name: string;
  readonly description: string;
  readonly method: string;
  readonly methodParameters: SchemaValueJson;
  readonly inputs: { provisionalRef: string; items?: SchemaValueJson[]; batchesHex?: string[] }[];
  readonly expected: {
    readonly resultGraph: JsonValue;
    readonly resultValue?: JsonValue;
    readonly outputs: ExpectedOutput[];
    readonly finished: JsonValue;
  };
}

/** What arrived on one output channel, in the vector's shape; stream leaves become {"nested": i}. */
function observed(messages: readonly ServerMessage[], channel: number, expected: ExpectedOutput): ExpectedOutput {
  const items: JsonValue[] = [];
  const bytes: Uint8Array[] = [];
  const blobs: { bytesHex: string; mimeType?: string }[] = [];
  const nestedMappings: StreamMapping[] = [];
  let outcome: JsonValue = null;
  for (const m of messages) {
    if (!("channel" in m) || m.channel !== channel) continue;
    if (m.type === "outputStreamItem") {
      const byToken = new Map(m.mappings.map((mapping) => [mapping.streamToken, mapping]));
      items.push(
        JSON.parse(JSON.stringify(m.value), (_key, value: unknown) => {
          const token = (value as { value?: { streamToken?: string } } | null)?.value?.streamToken;
          const mapping = token === undefined ? undefined : byToken.get(token);
          if (mapping !== undefined) {
            nestedMappings.push(mapping);
            return { nested: nestedMappings.length - 1 };
          }
          return value;
        }) as JsonValue,
      );
    }
    if (m.type === "output-u8") bytes.push(m.payload);
    if (m.type === "output-binary")
      blobs.push({ bytesHex: Buffer.from(m.payload).toString("hex"), ...(m.mimeType === undefined ? {} : { mimeType: m.mimeType }) });
    if (m.type === "outputStreamEnd") outcome = m.outcome as unknown as JsonValue;
  }
  return {
    ...(expected.items === undefined ? {} : { items }),
    ...(expected.bytesHex === undefined ? {} : { bytesHex: Buffer.concat(bytes).toString("hex") }),
    ...(expected.blobs === undefined ? {} : { blobs }),
    ...(expected.nested === undefined
      ? {}
      : { nested: nestedMappings.map((mapping, i) => observed(messages, mapping.channel, expected.nested![i]!)) }),
    outcome,
  };
}

/** Fresh provisional references, so that every run is a new invocation. */
function freshRefs(c: DemoCase): { params: SchemaValueJson; refs: Map<string, string> } {
  const refs = new Map(c.inputs.map((input) => [input.provisionalRef, randomUUID()]));
  let text = JSON.stringify(c.methodParameters);
  for (const [from, to] of refs) text = text.replaceAll(from, to);
  return { params: JSON.parse(text) as SchemaValueJson, refs };
}

function demoCase(c: DemoCase): Check {
  return defineChecks("methods", [
    {
      name: c.name,
      ref: "decisions §7, demo-sessions.json",
      expectation: `${c.method}: ${c.description}`,
      async run(ctx) {
        const { params, refs } = freshRefs(c);
        const start: InvocationStart = demoStart(c.method, params);
        const { conn, accepted } = await ctx.start(start);
        for (const input of c.inputs) {
          const channel = accepted.mappings.find((m) => m.provisionalRef === refs.get(input.provisionalRef))?.channel;
          ensureEqual(channel !== undefined, true, `a mapping for input ${input.provisionalRef}`);
          let sequence = 0n;
          for (const value of input.items ?? []) conn.send({ type: "inputStreamItem", channel: channel!, sequence: sequence++, value });
          for (const hex of input.batchesHex ?? []) {
            const payload = Buffer.from(hex, "hex");
            conn.send({ type: "input-u8", channel: channel!, sequence, payload });
            sequence += BigInt(payload.length);
          }
          conn.send({ type: "inputStreamEnd", channel: channel!, sequence });
        }
        const { messages, closed } = await conn.all();
        ensureTrace([accepted, ...messages.slice(1)]);
        const result = messages.find((m) => m.type === "invocationResult");
        ensureEqual(result?.type === "invocationResult" ? result.result.kind : undefined, "value", "invocationResult kind");
        if (result?.type !== "invocationResult" || result.result.kind !== "value") return;
        ensureEqual(result.result.graph, c.expected.resultGraph, "result graph");
        if (c.expected.resultValue !== undefined) ensureEqual(result.result.value, c.expected.resultValue, "result value");
        ensureEqual(
          result.mappings.map((mapping, i) => observed(messages, mapping.channel, c.expected.outputs[i]!)),
          c.expected.outputs,
          "outputs",
        );
        const finished = messages.at(-1);
        ensureEqual(finished?.type === "invocationFinished" ? finished.outcome : finished?.type, c.expected.finished, "last message");
        ensureEqual(closed.code, 1000, "close code after invocationFinished");
        return `${messages.length} messages, close ${closed.code}`;
      },
    },
  ])[0]!;
}

export function methodChecks(): Check[] {
  return loadVectors<{ cases: DemoCase[] }>("demo-sessions.json").cases.map(demoCase);
}
