// A CommonJS consumer of the client alone (require() of ESM, Node >= 20.19): the same call as invoke.mjs.
const { createClient, inputStream } = require("@golem-stream/client");

async function main() {
  const client = createClient({ url: process.argv[2], token: "s3cret" });
  const call = client.invoke({
    application: "demo",
    environment: "default",
    agentType: "echo",
    constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "cjs" }] } },
    method: "reverse",
    methodParameters: { kind: "record", value: { fields: [inputStream.strings(["abc", "héllo"])] } },
  });
  const result = await call.result;
  const out = [];
  for await (const item of result.streams[0].values()) out.push(item.value);
  await call.finished;
  console.log(`cjs: ${out.join(" ")}`);
}
main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
