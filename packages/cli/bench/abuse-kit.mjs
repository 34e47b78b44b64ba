/**
 * Shared parts of the abuse benches (lockout-serve.mjs, soak.mjs): a real
 * `golem-stream serve` process, helper processes with a raised descriptor
 * limit, the clients those benches open (valid, silent, non-ponging,
 * refused), and reading the server's /metrics.
 *
 * Every process here is started through `sh -c 'ulimit -n N; exec ...'`: ten
 * thousand sockets need more descriptors than a login shell's usual 1024, and
 * the limit must be raised before the process opens its first socket.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { upgradeRequest } from "@golem-stream/test-support";
import { decodeServerMessage, encodeBearerSubprotocol, encodeMessage, SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";

const require = createRequire(createRequire(import.meta.resolve("@golem-stream/client")).resolve("ws"));
/** `ws` as the client (and so the CLI) resolves it. */
export const { WebSocket } = require("ws");

export const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
/** Descriptors asked for in every process started here; the hard limit caps it where we may not raise it. */
export const FILE_LIMIT = 65_536;

/** Whether `ws` loads the optional native `bufferutil` (frame masking in C). */
export function bufferutilStatus() {
  try {
    require("bufferutil");
    return "loaded";
  } catch {
    return "not loaded";
  }
}

/**
 * `node <args>` with the descriptor limit raised to FILE_LIMIT (or as far as the hard limit
 * allows: `ulimit -n` fails for an unprivileged user above it, then the hard limit is used).
 */
export function spawnNode(args, options = {}) {
  const quoted = [process.execPath, ...args].map((word) => `'${String(word).replaceAll("'", `'\\''`)}'`).join(" ");
  return spawn("sh", ["-c", `ulimit -n ${FILE_LIMIT} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec ${quoted}`], options);
}

/** `golem-stream serve` with `args`; resolves with the process, its URL and port once it listens. */
export function startServe(args) {
  const child = spawnNode([BIN, "serve", "--port", "0", "--log-level", "error", "--metrics", ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let text = "";
    child.once("exit", (code) => reject(new Error(`serve exited ${code} before listening: ${text}`)));
    child.stdout.on("data", (chunk) => {
      text += chunk;
      const match = /^listening on (\S+)$/m.exec(text);
      if (match) {
        child.stdout.resume();
        child.removeAllListeners("exit");
        resolve({ child, url: match[1], port: Number(new URL(match[1]).port) });
      }
    });
  });
}

/** A process's open-files limit (soft), from /proc; "unknown" where there is none. */
export function descriptorLimit(pid) {
  try {
    return /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"))?.[1] ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** Stops a process started here and waits for it. */
export function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", resolve);
    child.kill("SIGTERM");
  });
}

/** The server's /metrics as a map of `name{labels}` to value. */
export async function scrapeMetrics(url) {
  const response = await fetch(`${url}/metrics`);
  const values = new Map();
  for (const line of (await response.text()).split("\n")) {
    if (line.startsWith("#") || line.length === 0) continue;
    const space = line.lastIndexOf(" ");
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}

/** Sum of every series of `name` (all label sets), or 0. */
export function metricSum(values, name) {
  let sum = 0;
  for (const [key, value] of values) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}

/**
 * Event-loop delay in ms from prom-client's `nodejs_eventloop_lag_<stat>_seconds`, less the
 * 10 ms period of the timer Node samples it with (monitorEventLoopDelay records the time between
 * the timer's runs, so an idle loop reads 10 ms): the delay beyond the timer's own period.
 */
export function loopDelayMs(values, stat) {
  return Math.max(0, metricSum(values, `nodejs_eventloop_lag_${stat}_seconds`) * 1000 - 10);
}

export const demoSelector = (method) => ({
  agentType: "echo",
  application: "demo",
  environment: "default",
  method,
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "abuse" }] } },
});

/** `count` to `to`: a small invocation that finishes by itself. */
export const countStart = (to = 1) =>
  encodeMessage({
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters: {
      kind: "record",
      value: {
        fields: [
          { kind: "u32", value: to },
          { kind: "u32", value: 0 },
        ],
      },
    },
    selector: demoSelector("count"),
  });

/** `reverse` of an input stream the client never writes to: a session that stays running and idle. */
export const idleStart = () =>
  encodeMessage({
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { provisionalRef: randomUUID() } }] } },
    selector: demoSelector("reverse"),
  });

/** The type of a server message (decoded strictly, as a client would). */
export function messageType(data, isBinary) {
  return decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary).type;
}

/**
 * Opens an authenticated session socket from `localAddress`. Resolves
 * `{ socket, ms }` on the upgrade (ms from the TCP connect to the open) or
 * `{ refused }` (the HTTP status, or the error's code).
 */
export function openSession(url, token, { localAddress, autoPong = true } = {}) {
  const begin = performance.now();
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], {
      headers: { authorization: `Bearer ${token}` },
      perMessageDeflate: false,
      autoPong,
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    socket.once("unexpected-response", (_request, response) => {
      response.resume();
      socket.terminate();
      resolve({ refused: String(response.statusCode) });
    });
    socket.once("error", (error) => resolve({ refused: error.code ?? String(error) }));
    socket.once("open", () => resolve({ socket, ms: performance.now() - begin }));
  });
}

/** Waits for the first message of `type` on an open socket; resolves its type, or `closed <code>` if the socket closes first. */
export function nextOf(socket, ...types) {
  return new Promise((resolve) => {
    const onMessage = (data, isBinary) => {
      const type = messageType(data, isBinary);
      if (types.includes(type)) done(type);
    };
    const onClose = (code) => done(`closed ${code}`);
    const done = (outcome) => {
      socket.off("message", onMessage);
      socket.off("close", onClose);
      resolve(outcome);
    };
    socket.on("message", onMessage);
    socket.once("close", onClose);
  });
}

/**
 * A hostile upgrade on a bare TCP socket from `localAddress`: the request's
 * extra header lines are `headers`. Resolves with the HTTP status the server
 * answered (or the error's code) as soon as it answers; the socket is left
 * as it is, its close frame (if any) never answered: the server has to drop it.
 */
export function hostileUpgrade(port, localAddress, headers) {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1", localAddress });
    let answered = false;
    socket.on("error", (error) => {
      if (!answered) resolve(error.code ?? String(error));
      answered = true;
    });
    socket.on("close", () => {
      if (!answered) resolve("closed");
      answered = true;
    });
    socket.once("data", (chunk) => {
      answered = true;
      resolve(/^HTTP\/1\.1 (\d+)/.exec(chunk.toString("latin1"))?.[1] ?? "garbage");
      socket.on("data", () => undefined); // read, never answer
    });
    socket.write(upgradeRequest(`127.0.0.1:${port}`, headers));
  });
}

/** Headers of an upgrade that offers a bearer subprotocol entry (a wrong token) and no Origin: refused by upgrade-then-close. */
export const bearerEntryHeaders = () => [`Sec-WebSocket-Protocol: ${SUBPROTOCOL}, ${encodeBearerSubprotocol(`wrong-${randomUUID()}`)}`];
/** Headers of an upgrade with a wrong bearer token: 401, and after the address's allowance 503 (throttled). */
export const wrongTokenHeaders = () => [`Sec-WebSocket-Protocol: ${SUBPROTOCOL}`, `Authorization: Bearer wrong-${randomUUID()}`];

/** `q` quantile of sorted numbers. */
export function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Counts of each distinct value. */
export function tally(values) {
  const counts = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
