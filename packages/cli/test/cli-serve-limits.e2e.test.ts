/**
 * `serve`'s abuse bounds on the command line (docs/operations.md, "Limits
 * and abuse"), on a real process over loopback: `--first-message-timeout`
 * closes a connection that says nothing, `--max-connections-per-principal`
 * refuses a token's extra connection with 503, `--auth-failure-limit`
 * refuses an address after that many failures, `--public-host` names the
 * Host the HTTP endpoints answer besides localhost and addresses. Bad values are usage errors.
 * The flag-to-limit mapping of every flag: serve-limits.test.ts.
 */
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import net from "node:net";
import { expect, it } from "vitest";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServe, TOKEN } from "./support/processes.js";

interface Upgrade {
  /** The status line of the answer. */
  readonly status: Promise<string>;
  /** The close status of the server's close frame, if one came before the connection ended. */
  readonly closeStatus: Promise<number | undefined>;
  readonly socket: net.Socket;
}

/** An opening handshake by hand that never sends a frame and never answers one. */
function upgrade(url: string, token: string): Upgrade {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on("error", () => undefined);
  let received = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
  socket.write(
    [
      `GET ${SESSION_PATH} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      "Sec-WebSocket-Version: 13",
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
      `Sec-WebSocket-Protocol: ${SUBPROTOCOL}`,
      `Authorization: Bearer ${token}`,
      "",
      "",
    ].join("\r\n"),
  );
  const status = new Promise<string>((resolve) => {
    const check = (): void => {
      const end = received.indexOf("\r\n");
      if (end < 0) return;
      socket.off("data", check);
      resolve(received.subarray(0, end).toString());
    };
    socket.on("data", check);
  });
  const closeStatus = new Promise<number | undefined>((resolve) =>
    socket.once("close", () => {
      const head = received.indexOf("\r\n\r\n");
      const frame = received.subarray(head + 4);
      resolve(head >= 0 && frame.length >= 4 && (frame[0]! & 0x0f) === 0x8 ? frame.readUInt16BE(2) : undefined);
    }),
  );
  return { status, closeStatus, socket };
}

it("serve --first-message-timeout, --max-connections-per-principal and --auth-failure-limit bound a real server", async () => {
  const dataDir = scratchDir();
  const server = await startServe(
    [
      "--port",
      "0",
      "--token",
      TOKEN,
      "--data-dir",
      dataDir,
      "--no-console",
      "--first-message-timeout",
      "300ms",
      "--max-connections-per-principal",
      "1",
      "--auth-failure-limit",
      "2",
    ],
    dataDir,
  );
  try {
    const url = server.url;
    const quiet = upgrade(url, TOKEN);
    expect(await quiet.status).toMatch(/^HTTP\/1\.1 101 /);
    // The token's one connection is open: another one is refused.
    const extra = upgrade(url, TOKEN);
    expect(await extra.status).toMatch(/^HTTP\/1\.1 503 /);
    // The quiet one is closed with 1002 after the first-message timeout.
    expect(await quiet.closeStatus).toBe(1002);
    // Two failed authentications, then the address is refused even with the right token.
    for (const _ of [1, 2]) expect(await upgrade(url, "wrong-token").status).toMatch(/^HTTP\/1\.1 401 /);
    expect(await upgrade(url, TOKEN).status).toMatch(/^HTTP\/1\.1 503 /);
  } finally {
    await server.stop();
  }
});

it("serve refuses bad bound values as usage errors", async () => {
  for (const flag of [
    ["--auth-failure-limit", "-1"],
    ["--first-message-timeout", "0s"],
    ["--ping-interval", "soon"],
    ["--max-connections-per-principal", "0"],
    ["--max-connections", "0"],
    ["--max-http-connections", "0"],
    ["--max-sessions-per-principal", "x"],
    ["--max-stored-bytes-per-principal", "16GB"],
    ["--max-stored-bytes-per-principal", "0"],
  ]) {
    const result = await run(["serve", "--port", "0", "--data-dir", scratchDir(), ...flag]);
    expect(result.code, flag.join(" ")).toBe(EXIT.usage);
    expect(result.stderr.toString(), flag.join(" ")).toContain(flag[0]);
  }
});

it("serve --public-host: the health endpoints answer that name, localhost and addresses, and refuse other names", async () => {
  const dataDir = scratchDir();
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--public-host", "golem.test"], dataDir);
  try {
    const status = (host: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ hostname: "127.0.0.1", port: server.port, path: "/healthz", headers: { host } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    expect(await status("golem.test")).toBe(200);
    expect(await status(`localhost:${server.port}`)).toBe(200);
    expect(await status(`127.0.0.1:${server.port}`)).toBe(200);
    expect(await status("rebinding.example")).toBe(403);
  } finally {
    await server.stop();
  }
});
