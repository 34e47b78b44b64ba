// Allocation sampling (including objects collected by GC) of the embedded server during tally.
import { Session } from "node:inspector/promises";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedServer } from "@golem-stream/server";
import { fork } from "node:child_process";
const server = await startEmbeddedServer({ dataDir: mkdtempSync(join(tmpdir(), "hs-")), port: 0, host: "127.0.0.1", tokens: ["t"] });
const session = new Session(); session.connect();
const run = () => new Promise((resolve, reject) => { const c = fork(new URL("./heapclient.tmp.mjs", import.meta.url), [server.url], { stdio: "inherit" }); c.on("exit", (code) => code === 0 ? resolve() : reject(new Error("client " + code))); });
await run();
await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
await run();
const { profile } = await session.post("HeapProfiler.stopSampling");
const self = new Map(); let total = 0;
(function walk(n) { const f = n.callFrame; const k = `${f.functionName || "(anon)"} ${f.url.replace(/.*\/(dist|lib)\//, "")}:${f.lineNumber}`; total += n.selfSize; self.set(k, (self.get(k) ?? 0) + n.selfSize); n.children.forEach(walk); })(profile.head);
console.log("sampled", (total / 1048576).toFixed(0), "MiB");
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 35)) console.log((100 * v / total).toFixed(1).padStart(5), "%", k);
await server.close(); process.exit(0);
