import { startEmbeddedServer } from "@golem-stream/server";
import { createClient, inputStream } from "@golem-stream/client";
import { mkdtempSync } from "node:fs"; import { tmpdir } from "node:os"; import { join } from "node:path";
const server = await startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir: mkdtempSync(join(tmpdir(), "gs-")), tokens: ["t"], synchronous: "normal" });
const client = createClient({ url: server.url, token: "t" });
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "x" }] } };
const lines = Array.from({ length: 5000 }, (_, i) => `line ${i} of the text ${"x".repeat(i % 200)}`);
const text = new TextEncoder().encode(lines.join("\n"));
for (let run = 0; run < 4; run++) {
  const chunks = []; for (let at = 0; at < text.length; at += 7777) chunks.push(text.subarray(at, at + 7777));
  const t0 = performance.now();
  const call = client.invoke({ application: "demo", environment: "default", agentType: "echo", constructorParameters: ctor, method: "split", methodParameters: { kind: "record", value: { fields: [inputStream.bytes(chunks)] } } });
  call.on("reconnecting", (e) => console.log("reconnecting", e));
  const r = await call.result;
  const [u, l] = r.streams;
  let nb = 0, nl = 0, lastB = 0, lastL = 0;
  const stamp = () => (performance.now() - t0).toFixed(0);
  const gaps = [];
  const a = (async () => { for await (const b of u.bytes()) { const t = performance.now(); if (t - lastB > 500 && lastB) gaps.push(["b", nb, stamp()]); lastB = t; nb += b.length; } })();
  const b = (async () => { for await (const x of l.values()) { const t = performance.now(); if (t - lastL > 500 && lastL) gaps.push(["l", nl, stamp()]); lastL = t; nl++; } })();
  await Promise.all([a, b]); await call.finished;
  console.log(run, nb, nl, stamp(), "ms", JSON.stringify(gaps));
}
await server.close();
