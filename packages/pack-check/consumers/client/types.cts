// A CommonJS TypeScript consumer (module nodenext, TypeScript >= 5.8 types require() of ESM).
import client = require("@golem-stream/client");

const options: client.InvokeOptions = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [] } },
  method: "count",
  methodParameters: { kind: "record", value: { fields: [] } },
};
export const call = client.createClient({ url: "http://127.0.0.1:9881", token: "s3cret" }).invoke(options);
