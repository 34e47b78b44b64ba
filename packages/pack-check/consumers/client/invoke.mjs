// An ESM consumer of the client alone: reverse two strings on the server at argv[2].
import { createClient, defineAgentType, isClientError, t, typedAgent } from "@golem-stream/client";

const client = createClient({ url: process.argv[2], token: "s3cret" });
try {
  const agent = await client.agent({ application: "demo", environment: "default", agentType: "echo", constructorArgs: { name: "esm" } });
  const result = await agent.invoke("reverse", { input: ["abc", "héllo"] }).result;
  if (result.kind !== "value") throw new Error("reverse returns a stream");
  const out = [];
  for await (const text of result.js().js()) out.push(text);
  console.log(`esm: ${out.join(" ")}`);
  // The same call typed by a contract (checked against the server's catalogue first).
  const echo = defineAgentType({
    name: "echo",
    constructor: t.record({ name: t.string() }),
    methods: { reverse: { params: t.record({ input: t.stream(t.string()) }), result: t.stream(t.string()) } },
  });
  const typed = await typedAgent(client, echo, { application: "demo", environment: "default", constructorArgs: { name: "esm" } });
  const typedOut = [];
  for await (const text of await typed.reverse({ input: ["abc", "héllo"] })) typedOut.push(text);
  console.log(`esm typed: ${typedOut.join(" ")}`);
} catch (error) {
  console.error(isClientError(error) ? `${error.kind}: ${error.message}` : error);
  process.exitCode = 1;
}
