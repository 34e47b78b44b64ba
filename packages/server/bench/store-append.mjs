#!/usr/bin/env node
/**
 * The SQLite store's append path alone (no sockets, no agent): CPU per item
 * of `acceptInput` + `appendOutput` of 64-byte items, a `reverse`-like
 * pair per item, in bursts issued together (one group commit each), for
 * this checkout's store and, optionally, another build's, alternating in
 * fresh processes round by round (docs/performance.md).
 *
 *   node bench/store-append.mjs [/path/to/other/packages/server/dist/index.js]
 *   STORE_ITEMS=20000 STORE_ROUNDS=5 STORE_BURSTS=1,16,64 node bench/store-append.mjs ...
 *   STORE_WATCHED=1 node bench/store-append.mjs ...   # input through acceptInputWatched where a build has it
 *
 * The store runs at `synchronous: "normal"`: the WAL sync is the disk's
 * time, not the store's CPU, and would only add noise here.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";

const ITEMS = Number(process.env.STORE_ITEMS ?? 20000);
const ROUNDS = Number(process.env.STORE_ROUNDS ?? 5);
const BURSTS = (process.env.STORE_BURSTS ?? "1,16,64").split(",").map(Number);
const HERE = fileURLToPath(new URL("../dist/index.js", import.meta.url));
/** Input chunks handed over as the session hands most of them: told to a watcher, no promise each (a build without the method uses `acceptInput`). */
const WATCHED = process.env.STORE_WATCHED === "1";

if (process.argv[2] === "--child") {
  const [, , , modulePath, burstText] = process.argv;
  console.log(JSON.stringify(await measure(modulePath, Number(burstText))));
  process.exit(0);
}

const other = process.argv[2];
const builds = other === undefined ? { here: HERE } : { here: HERE, other };
const results = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const burst of BURSTS) {
    for (const [name, path] of Object.entries(builds)) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--child", path, String(burst)], { encoding: "utf8" });
      ((results[burst] ??= {})[name] ??= []).push(JSON.parse(out).microsPerItem);
    }
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(
  `store appends, ${ITEMS} items of 64 bytes per round (an input and an output row each${WATCHED ? "; input through acceptInputWatched where a build has it" : ""}), ${ROUNDS} rounds, CPU µs per item (median, range)`,
);
for (const burst of BURSTS) {
  const row = results[burst];
  const cells = Object.entries(row).map(
    ([name, values]) => `${name} ${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`,
  );
  let ratio = "";
  if (row.other !== undefined) {
    const ratios = row.here.map((value, i) => row.other[i] / value);
    ratio = `  other/here ${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
  }
  console.log(`  burst ${String(burst).padStart(3)}: ${cells.join("  ")}${ratio}`);
}

async function measure(modulePath, burst) {
  const { SqliteSessionStore } = await import(pathToFileURL(modulePath).href);
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-store-append-"));
  try {
    const store = new SqliteSessionStore({ dataDir, synchronous: "normal" });
    const sessionId = randomUUID();
    const stream = (direction, parent, coordinate) => ({
      streamId: randomUUID(),
      sessionId,
      direction,
      elementKind: "value",
      elementGraph: '{"root":{"kind":"string","value":{}}}',
      coordinate,
      provisionalRef: undefined,
      parent,
      token: `gai1_${randomUUID()}`,
    });
    const input = stream("input", { kind: "params" }, "/methodParameters/value/fields/0");
    const output = stream("output", { kind: "result" }, "/result");
    await store.createSession(
      {
        sessionId,
        account: "acme",
        principal: "alice",
        application: "demo",
        environment: "default",
        agentType: "echo",
        agentIdentity: "ab".repeat(32),
        method: "reverse",
        idempotencyKey: "k",
        selector: "{}",
        config: "[]",
        parameters: "{}",
        generation: 1n,
        sessionToken: "t",
        streamKeyId: "k1",
        state: "running",
        result: undefined,
        outcome: undefined,
        createdAt: 1000,
        finishedAt: undefined,
      },
      [input],
      { attemptId: randomUUID(), operation: "start", descriptorDigest: "d", sessionId, generation: 1n },
    );
    await store.setResult(sessionId, '{"kind":"none"}', [output]);
    const data = Buffer.from(`"${"x".repeat(62)}"`);
    const watched = WATCHED && typeof store.acceptInputWatched === "function";
    const run = async (from, count) => {
      for (let at = from; at < from + count; at += burst) {
        const writes = [];
        let told = 0;
        let expected = 0;
        let allTold;
        const watcher = {
          inputSettled: (error) => {
            if (error !== undefined) throw error;
            if (++told === expected) allTold();
          },
        };
        for (let i = at; i < Math.min(at + burst, from + count); i++) {
          const sequence = BigInt(i);
          const chunk = { streamId: input.streamId, sequence, itemCount: 1n, data, mimeType: undefined };
          if (watched) {
            expected++;
            store.acceptInputWatched(chunk, undefined, watcher);
          } else writes.push(store.acceptInput(chunk, []));
          writes.push(
            store.appendOutput({ event: "item", streamId: output.streamId, sequence, itemCount: 1n, data, mimeType: undefined }, []),
          );
        }
        if (expected > 0) writes.push(new Promise((resolve) => (allTold = resolve)));
        await Promise.all(writes);
      }
    };
    const warm = 2000;
    await run(0, warm);
    const started = process.cpuUsage();
    await run(warm, ITEMS);
    const used = process.cpuUsage(started);
    await store.close();
    return { microsPerItem: (used.user + used.system) / ITEMS };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
