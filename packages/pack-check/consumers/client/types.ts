// Type-checked under nodenext and bundler: every type a client user writes comes from the client.
import {
  createClient,
  defineAgentType,
  inputStream,
  t,
  typedAgent,
  type TypedOutput,
  isClientError,
  type ClientMessage,
  type InvokeOptions,
  type OutputStream,
  type ResumeState,
  type SchemaGraphJson,
  type SchemaValueJson,
  type ServerMessage,
  type Transport,
} from "@golem-stream/client";

const name = { kind: "string", value: "reader-1" } as const;
const options: InvokeOptions = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [name] } },
  method: "reverse",
  methodParameters: { kind: "record", value: { fields: [inputStream.strings(["abc"])] } },
};
const client = createClient({ url: "http://127.0.0.1:9881", getToken: async () => "s3cret" });
export async function run(): Promise<string[]> {
  const call = client.invoke(options);
  const result = await call.result;
  if (result.kind !== "value") return [];
  const graph: SchemaGraphJson = result.graph;
  const stream: OutputStream | undefined = result.streams[0];
  const out: string[] = [];
  for await (const item of stream?.values() ?? []) out.push(JSON.stringify(item));
  const state: ResumeState | undefined = call.detach();
  return [String(graph), ...out, JSON.stringify(state)];
}
export type Messages = ClientMessage | ServerMessage;
export const empty: SchemaValueJson = { kind: "record", value: { fields: [name] } };
export const isError = isClientError;
export type { Transport };

// A typed call from a contract, written with the client's re-exported defineAgentType and t.
const echo = defineAgentType({
  name: "echo",
  constructor: t.record({ name: t.string() }),
  methods: { reverse: { params: t.record({ input: t.stream(t.string()) }), result: t.stream(t.string()) } },
});
export async function typed(): Promise<string[]> {
  const agent = await typedAgent(client, echo, { application: "demo", environment: "default", constructorArgs: { name: "typed" } });
  const reversed: TypedOutput<string> = await agent.reverse({ input: ["abc"] });
  const out: string[] = [];
  for await (const text of reversed) out.push(text);
  return out;
}
