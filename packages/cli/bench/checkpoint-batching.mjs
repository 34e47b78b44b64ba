// `count N 0` through the real CLI against a local server: no checkpoint, a checkpoint written
// after every item (--checkpoint-interval 0, what earlier versions did), and the default batched
// checkpoint. Median of several runs, interleaved so machine load hits all three alike.
// Usage (after npx tsc -p tsconfig.json): node bench/checkpoint-batching.mjs [items] [runs]
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const items = Number(process.argv[2] ?? 2000);
const runs = Number(process.argv[3] ?? 5);
const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "golem-stream-bench-ckpt-"));
const token = "bench-token";

const server = spawn(process.execPath, [
  BIN,
  "serve",
  "--port",
  "0",
  "--token",
  token,
  "--data-dir",
  join(dir, "data"),
  "--log-level",
  "error",
]);
const url = await new Promise((resolve) => {
  let text = "";
  server.stdout.on("data", (chunk) => {
    text += chunk;
    const match = /^listening on (\S+)$/m.exec(text);
    if (match) resolve(match[1]);
  });
});

function exec(args) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, GOLEM_STREAM_TOKEN: token, GOLEM_STREAM_URL: url },
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.on("close", (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`${args.join(" ")} exited ${code}`)),
    );
  });
}

const count = ["invoke", "echo", "count", "-c", '{"name":"bench"}', String(items), "0"];
const variants = {
  "no --checkpoint": () => count,
  "--checkpoint, every item (--checkpoint-interval 0)": (i) => [
    ...count,
    "--checkpoint",
    join(dir, `every-${i}.ckpt`),
    "--checkpoint-interval",
    "0",
  ],
  "--checkpoint, batched (default: 100 ms / 1000 items)": (i) => [...count, "--checkpoint", join(dir, `batched-${i}.ckpt`)],
};
const times = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
try {
  for (let i = 0; i < runs; i++) for (const [name, args] of Object.entries(variants)) times[name].push(await exec(args(i)));
} finally {
  server.kill("SIGTERM");
}
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const baseline = median(times["no --checkpoint"]);
console.log(`invoke echo count ${items} 0, median of ${runs} runs (whole process: start, discovery, session)`);
for (const [name, list] of Object.entries(times)) {
  const ms = median(list);
  console.log(
    `  ${name.padEnd(54)} ${(ms / 1000).toFixed(2).padStart(6)} s  x${(ms / baseline).toFixed(2)}  (${list.map((t) => (t / 1000).toFixed(2)).join(", ")})`,
  );
}
