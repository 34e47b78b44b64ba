// The lock-out attack against a server with the default limits (docs/operations.md, "Limits
// and abuse"): hostile clients open upgrades that offer a bearer subprotocol entry with a wrong
// token and no Origin (refused by a close, with the browser extension on, as `serve` runs it) and
// never answer the close frame, at full speed from many loopback addresses (127.0.1.x, so the
// per-address throttle is met as a spread-out attacker meets it). Meanwhile a valid client
// connects and starts an invocation every 100 ms from 127.0.0.1. Prints how long each valid
// connect took (to invocationAccepted) and how many were refused.
// Run: npx tsc -p tsconfig.json && BENCH_SECONDS=60 node bench/lockout.mjs
// (BENCH_ATTACKERS, BENCH_ADDRESSES, BENCH_THROTTLE=0 for no per-address throttle)
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { upgradeRequest } from "@golem-stream/test-support";
import { decodeServerMessage, encodeBearerSubprotocol, encodeMessage, SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { startEmbeddedServer } from "../dist/index.js";
import { demoStart, v } from "../dist/testing/demo-messages.js";

const TOKEN = "a-valid-bench-token-0123456789";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const ATTACKERS = Number(process.env.BENCH_ATTACKERS ?? 32);
const ADDRESSES = Number(process.env.BENCH_ADDRESSES ?? 200);
/** Failed authentications per address before it is throttled (the default 20; 0: off, as behind a proxy). */
const THROTTLE = Number(process.env.BENCH_THROTTLE ?? 20);

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-lockout-"));
const server = await startEmbeddedServer({
  dataDir,
  tokens: [TOKEN],
  synchronous: "normal",
  browsers: { allowedOrigins: ["http://app.example"] },
  limits: { authFailuresPerAddress: THROTTLE },
});
const { port } = new URL(server.url);
const deadline = performance.now() + SECONDS * 1000;
let attacks = 0;
let nextAddress = 0;

let open = 0;
let mostOpen = 0;

/**
 * One hostile upgrade from the next loopback address; resolves as soon as the server answered it
 * (the attacker goes on at once, leaving this socket open and its close frame unanswered).
 */
function attack() {
  return new Promise((resolve) => {
    const localAddress = `127.0.1.${1 + (nextAddress++ % ADDRESSES)}`;
    const socket = connect({ port: Number(port), host: "127.0.0.1", localAddress });
    mostOpen = Math.max(mostOpen, ++open);
    socket.on("error", () => resolve());
    socket.on("close", () => {
      open--;
      resolve();
    });
    socket.on("data", () => resolve()); // read (and never answer) the answer and the close frame
    socket.write(
      upgradeRequest(`127.0.0.1:${port}`, [`Sec-WebSocket-Protocol: ${SUBPROTOCOL}, ${encodeBearerSubprotocol("wrong-token")}`]),
    );
    attacks++;
  });
}

async function attacker() {
  while (performance.now() < deadline) await attack();
}

/** A valid connect and start: ms to invocationAccepted, or the refusal. */
function validClient() {
  const begin = performance.now();
  return new Promise((resolve) => {
    const socket = new WebSocket(`${server.url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${TOKEN}` } });
    socket.on("unexpected-response", (_request, response) => resolve({ refused: response.statusCode }));
    socket.on("error", (error) => resolve({ refused: String(error) }));
    socket.on("open", () => socket.send(encodeMessage(demoStart("count", v.record(v.u32(1), v.u32(0))))));
    socket.on("message", (data, isBinary) => {
      const message = decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary);
      if (message.type === "invocationAccepted") {
        resolve({ ms: performance.now() - begin });
        socket.close();
      } else if (message.type === "invocationRejected") resolve({ refused: message.code });
    });
  });
}

const attacking = Array.from({ length: ATTACKERS }, attacker);
const waits = [];
const refusals = [];
while (performance.now() < deadline) {
  const outcome = await validClient();
  if (outcome.ms !== undefined) waits.push(outcome.ms);
  else refusals.push(outcome.refused);
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await Promise.all(attacking);
await server.close();
rmSync(dataDir, { recursive: true, force: true });

waits.sort((a, b) => a - b);
const at = (q) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]?.toFixed(1);
console.log(
  `${SECONDS} s, ${ATTACKERS} attackers over ${ADDRESSES} addresses, throttle ${THROTTLE}: ${attacks} hostile upgrades (${Math.round(attacks / SECONDS)}/s); ` +
    `most hostile sockets open at once ${mostOpen}; ` +
    `valid connects ${waits.length}, refused ${refusals.length}${refusals.length > 0 ? ` (${[...new Set(refusals)].join(", ")})` : ""}; ` +
    `wait to acceptance ms: median ${at(0.5)}, p99 ${at(0.99)}, max ${waits.at(-1)?.toFixed(1)}`,
);
