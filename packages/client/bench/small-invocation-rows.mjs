/**
 * The rows of `small-invocations.mjs`, for any servers: `tally` of one 64-byte item and of
 * `small`, one invocation after another from one client, then of one item from `concurrency`
 * callers at once. The PostgreSQL bench runs the same rows on its nodes
 * (packages/store-postgres/bench/small-invocations.mjs).
 */
import { createClient, inputStream } from "@golem-stream/client";
import { demo, median, tallied } from "./throughput.mjs";

const ITEM = "x".repeat(64);

/** One `tally` of `items` items through `client`, checked; its wall time in milliseconds. */
async function tallyOnce(client, items) {
  const began = performance.now();
  const call = client.invoke({
    ...demo,
    method: "tally",
    methodParameters: { kind: "record", value: { fields: [inputStream.strings(Array.from({ length: items }, () => ITEM))] } },
  });
  const result = await call.result;
  await call.finished;
  const took = performance.now() - began;
  tallied(items)(result);
  return took;
}

/** `count` invocations of `items` items, `concurrency` at a time; their milliseconds. */
async function tallies(client, items, concurrency, count) {
  const walls = [];
  let started = 0;
  const loop = async () => {
    while (started < count) {
      started++;
      walls.push(await tallyOnce(client, items));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return walls;
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/**
 * Runs the rows against `servers` (each `{ name, peers }`: the peers whose CPU counts, the first
 * one called), the servers taking turns in every round, and prints one line per server and row.
 */
export async function measureSmallInvocations(servers, { rounds, invocations, small, concurrency }) {
  /** Each row: items per invocation, and how many invocations run at once. */
  const rows = [
    { items: 1, concurrency: 1 },
    { items: small, concurrency: 1 },
    { items: 1, concurrency },
  ];
  /** Per server and row: every invocation's milliseconds, and each round's seconds and CPU per invocation. */
  const results = servers.map(() => rows.map(() => ({ wall: [], seconds: [], serverCpu: [], clientCpu: [] })));
  const clients = servers.map(({ peers }) => createClient({ url: peers[0].url, token: "t" }));
  for (const client of clients) for (const { items, concurrency: atOnce } of rows) await tallies(client, items, atOnce, 30);
  const cpuOf = async (peers) => {
    const usages = await Promise.all(peers.map((peer) => peer.cpu()));
    return usages.reduce((sum, usage) => sum + usage.user + usage.system, 0);
  };
  for (let round = 0; round < rounds; round++) {
    // Every other round the other order: a server that always runs second meets the disk still syncing.
    const order = round % 2 === 0 ? servers.map((_, i) => i) : servers.map((_, i) => servers.length - 1 - i);
    for (const index of order) {
      for (const [at, { items, concurrency: atOnce }] of rows.entries()) {
        const row = results[index][at];
        const serverBefore = await cpuOf(servers[index].peers);
        const clientBefore = process.cpuUsage();
        const began = performance.now();
        row.wall.push(...(await tallies(clients[index], items, atOnce, invocations)));
        row.seconds.push((performance.now() - began) / 1000);
        const serverCpu = (await cpuOf(servers[index].peers)) - serverBefore;
        const client = process.cpuUsage(clientBefore);
        row.serverCpu.push(serverCpu / invocations / 1000);
        row.clientCpu.push((client.user + client.system) / invocations / 1000);
      }
    }
  }
  for (const [index, { name }] of servers.entries()) {
    for (const [at, { items, concurrency: atOnce }] of rows.entries()) {
      const { wall, seconds, serverCpu, clientCpu } = results[index][at];
      const label = `tally of ${items} item${items === 1 ? "" : "s"}, ${atOnce === 1 ? "one at a time" : `${atOnce} at once`}, ${name}`;
      console.log(
        `  ${label.padEnd(50)} p50 ${percentile(wall, 50).toFixed(2)}  p99 ${percentile(wall, 99).toFixed(2)}` +
          `  ${Math.round(invocations / median(seconds))} per second` +
          `  CPU per invocation: server ${median(serverCpu).toFixed(2)}, client ${median(clientCpu).toFixed(2)}`,
      );
    }
  }
}
