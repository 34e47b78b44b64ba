// An ESM consumer of the client alone: reverse two strings on the server at argv[2].
import { createClient, isClientError } from "@golem-stream/client";

const client = createClient({ url: process.argv[2], token: "s3cret" });
try {
  const agent = await client.agent({ application: "demo", environment: "default", agentType: "echo", constructorArgs: { name: "esm" } });
  const result = await agent.invoke("reverse", { input: ["abc", "héllo"] }).result;
  if (result.kind !== "value") throw new Error("reverse returns a stream");
  const out = [];
  for await (const text of result.js().js()) out.push(text);
  console.log(`esm: ${out.join(" ")}`);
} catch (error) {
  console.error(isClientError(error) ? `${error.kind}: ${error.message}` : error);
  process.exitCode = 1;
}
