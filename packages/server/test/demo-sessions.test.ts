/** fixtures/stream-session-v1/demo-sessions.json replayed against the embedded server over loopback. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { InvocationStart, JsonValue, SchemaValueJson, ServerMessage, StreamMapping } from "@golem-stream/wire";
import { RawClient, demoStart, startTestServer, type TestServer } from "./helpers.js";

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

const file = fileURLToPath(new URL("../../../fixtures/stream-session-v1/demo-sessions.json", import.meta.url));
const cases = (JSON.parse(readFileSync(file, "utf8")) as { cases: DemoCase[] }).cases;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

/** What arrived on one output channel, in the fixture's shape. Stream leaves become {"nested": i}. */
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
          const token = (value as { kind?: string; value?: { streamToken?: string } } | null)?.value?.streamToken;
          if (token !== undefined && byToken.has(token)) {
            nestedMappings.push(byToken.get(token)!);
            return { nested: nestedMappings.length - 1 };
          }
          return value;
        }) as JsonValue,
      );
    }
    if (m.type === "output-u8") bytes.push(m.payload);
    if (m.type === "output-binary") blobs.push({ bytesHex: Buffer.from(m.payload).toString("hex"), ...(m.mimeType === undefined ? {} : { mimeType: m.mimeType }) });
    if (m.type === "outputStreamEnd") outcome = m.outcome as unknown as JsonValue;
  }
  return {
    ...(expected.items === undefined ? {} : { items }),
    ...(expected.bytesHex === undefined ? {} : { bytesHex: Buffer.concat(bytes).toString("hex") }),
    ...(expected.blobs === undefined ? {} : { blobs }),
    ...(expected.nested === undefined ? {} : { nested: nestedMappings.map((mapping, i) => observed(messages, mapping.channel, expected.nested![i]!)) }),
    outcome,
  };
}

describe("demo-sessions.json", () => {
  it("covers every demo method", () => {
    expect(cases.map((c) => c.method).sort()).toEqual(["blobs", "count", "digest", "fail", "groups", "reverse", "split"]);
  });

  for (const c of cases) {
    it(`${c.name}: ${c.description}`, async () => {
      const client = await RawClient.connect(server.url);
      const start: InvocationStart = demoStart(c.method, c.methodParameters);
      client.send(start);
      const accepted = await client.nextOf("invocationAccepted");
      for (const input of c.inputs) {
        const channel = accepted.mappings.find((m) => m.provisionalRef === input.provisionalRef)!.channel;
        let sequence = 0n;
        for (const value of input.items ?? []) client.send({ type: "inputStreamItem", channel, sequence: sequence++, value });
        for (const hex of input.batchesHex ?? []) {
          const payload = Buffer.from(hex, "hex");
          client.send({ type: "input-u8", channel, sequence, payload });
          sequence += BigInt(payload.length);
        }
        client.send({ type: "inputStreamEnd", channel, sequence });
      }
      const { messages } = await client.all();
      const result = messages.find((m) => m.type === "invocationResult");
      if (result?.type !== "invocationResult" || result.result.kind !== "value") throw new Error("no value result");
      expect(result.result.graph).toEqual(c.expected.resultGraph);
      if (c.expected.resultValue !== undefined) expect(result.result.value).toEqual(c.expected.resultValue);
      expect(result.mappings.map((mapping, i) => observed(messages, mapping.channel, c.expected.outputs[i]!))).toEqual(c.expected.outputs);
      const finished = messages.at(-1);
      expect(finished?.type === "invocationFinished" ? finished.outcome : undefined).toEqual(c.expected.finished);
    });
  }
});
