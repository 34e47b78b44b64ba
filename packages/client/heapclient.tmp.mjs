import { createClient, inputStream } from "@golem-stream/client";
const items = Array.from({ length: 50000 }, () => "x".repeat(64));
const client = createClient({ url: process.argv[2], token: "t" });
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } };
const call = client.invoke({ application: "demo", environment: "default", agentType: "echo", constructorParameters: ctor, method: "tally", methodParameters: { kind: "record", value: { fields: [inputStream.strings(items)] } } });
await call.result; await call.finished; process.exit(0);
