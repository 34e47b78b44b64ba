/**
 * `golem-stream serve` as a real process: what it prints, where it keeps its
 * token, how it stops and how it refuses a busy port, leaving no empty data
 * directory behind that it created for a start that failed.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { SESSION_PATH, SUBPROTOCOL, encodeBearerSubprotocol } from "@golem-stream/wire";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, start, startServe, TOKEN, waitFor } from "./support/processes.js";

it("generates a token on first start, keeps it in the data directory, says how to use it, and names the signing key", async () => {
  const dataDir = join(scratchDir(), "state");
  const server = start(["serve", "--port", "0", "--data-dir", dataDir]);
  await waitFor(server, () => /Stop with Ctrl-C/.test(server.stdout().toString()), "serve printed its instructions");
  const out = server.stdout().toString();
  const url = /^listening on (\S+)$/m.exec(out)?.[1] as string;
  const tokenFile = join(dataDir, "bearer-token");
  const token = readFileSync(tokenFile, "utf8").trim();
  expect(out).toContain(`GOLEM_STREAM_TOKEN=$(cat ${tokenFile})`);
  expect(out).not.toContain(token);
  // The keyring the server created in the data directory, named as with --keyring or in a cluster.
  const { activeKeyId } = Keyring.fromJSON(readFileSync(join(dataDir, "keyring.json"), "utf8"));
  expect(out).toMatch(new RegExp(`^signing key ${activeKeyId}$`, "m"));
  const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "2", "0"], {
    env: { GOLEM_STREAM_URL: url, GOLEM_STREAM_TOKEN: token },
  });
  expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1]);
  server.child.kill("SIGINT");
  const stopped = await server.done;
  expect(stopped.code).toBe(EXIT.success);
  expect(stopped.stderr).toMatch(/stopped/);

  // Same data directory, same token: clients keep working across restarts.
  const again = start(["serve", "--port", "0", "--data-dir", dataDir]);
  await waitFor(again, () => /^listening on /m.test(again.stdout().toString()), "serve listened again");
  expect(readFileSync(tokenFile, "utf8").trim()).toBe(token);
  again.child.kill("SIGTERM");
  expect((await again.done).code).toBe(EXIT.success);
});

it("refuses a port that is already in use with a usage error", async () => {
  const dataDir = join(scratchDir(), "state");
  const first = start(["serve", "--port", "0", "--token", "t0", "--data-dir", dataDir]);
  await waitFor(first, () => /^listening on /m.test(first.stdout().toString()), "the first server listened");
  const port = new URL(/^listening on (\S+)$/m.exec(first.stdout().toString())?.[1] as string).port;
  const second = await run(["serve", "--port", port, "--token", "t0", "--data-dir", join(scratchDir(), "other")]);
  expect(second.code).toBe(EXIT.usage);
  expect(second.stderr).toMatch(/already in use/);
  first.child.kill("SIGTERM");
  await first.done;
});

it("a start refused after the data directory was made (a token file that cannot be read) leaves no data directory behind", async () => {
  // Two new levels: both go; the parent that was there stays.
  const parent = scratchDir();
  const dataDir = join(parent, "new", "state");
  const refused = await run(["serve", "--port", "0", "--token-file", join(scratchDir(), "missing"), "--data-dir", dataDir]);
  expect(refused.code).toBe(EXIT.usage);
  expect(refused.stderr).toContain("cannot read it (ENOENT)");
  expect(existsSync(parent)).toBe(true);
  expect(readdirSync(parent)).toEqual([]);
});

it("refuses a malformed bearer token before starting", async () => {
  const result = await run(["serve", "--port", "0", "--token", "not a token", "--data-dir", join(scratchDir(), "s")]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stdout.length).toBe(0);
});

it("--retention: a finished invocation can be resumed within it, and is gone once it has passed", async () => {
  const dataDir = join(scratchDir(), "state");
  // Long enough for an invoke and a resume (two CLI processes) on a loaded machine: with 2 s the
  // session was sometimes swept before the first resume could reach it.
  const server = start(["serve", "--port", "0", "--token", "t0", "--data-dir", dataDir, "--retention", "6s"]);
  await waitFor(server, () => /^listening on /m.test(server.stdout().toString()), "serve listened");
  const env = { GOLEM_STREAM_URL: /^listening on (\S+)$/m.exec(server.stdout().toString())?.[1] as string, GOLEM_STREAM_TOKEN: "t0" };
  const checkpoint = join(scratchDir(), "count.ckpt");
  const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "3", "0", "--checkpoint", checkpoint], { env });
  expect(invoked.code).toBe(EXIT.success);
  // Right after: the session is still there (nothing left to replay, the invocation is finished).
  expect((await run(["resume", checkpoint], { env })).code).toBe(EXIT.success);
  // The server sweeps every min(retention, 60 s): poll until the session is gone.
  let resumed = await run(["resume", checkpoint], { env });
  for (let attempt = 0; attempt < 80 && resumed.code === EXIT.success; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    resumed = await run(["resume", checkpoint], { env });
  }
  expect(resumed.code).toBe(EXIT.rejected);
  expect(resumed.stderr).toMatch(/session-expired/);
  server.child.kill("SIGTERM");
  await server.done;
}, 60_000);

it("refuses a bad --retention, and a second server on a data directory in use", async () => {
  const badRetention = await run(["serve", "--port", "0", "--token", "t0", "--data-dir", join(scratchDir(), "s"), "--retention", "1.5h"]);
  expect(badRetention.code).toBe(EXIT.usage);
  expect(badRetention.stderr).toMatch(/duration/);

  const dataDir = join(scratchDir(), "state");
  const first = start(["serve", "--port", "0", "--token", "t0", "--data-dir", dataDir]);
  await waitFor(first, () => /^listening on /m.test(first.stdout().toString()), "the first server listened");
  // The second waits out SQLite's busy timeout (5 s) before it gives up.
  const second = await run(["serve", "--port", "0", "--token", "t0", "--data-dir", dataDir]);
  expect(second.code).toBe(EXIT.usage);
  expect(second.stderr).toMatch(/in use by another store/);
  first.child.kill("SIGTERM");
  expect((await first.done).code).toBe(EXIT.success);
}, 30_000);

/** The status of a session upgrade request offering `protocols`, from a page of `origin`. */
function upgradeStatus(url: string, protocols: string, origin: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${SESSION_PATH}`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-protocol": protocols,
        origin,
      },
    });
    req.on("upgrade", (_res, socket) => {
      socket.destroy();
      resolve(101);
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

it("--allow-origin: pages of that origin authenticate with the bearer entry; other origins are refused; a malformed origin is a usage error", async () => {
  const bad = await run([
    "serve",
    "--port",
    "0",
    "--token",
    "t0",
    "--allow-origin",
    "http://app.example/",
    "--data-dir",
    join(scratchDir(), "s"),
  ]);
  expect(bad.code).toBe(EXIT.usage);
  expect(bad.stderr).toMatch(/--allow-origin/);

  const server = start([
    "serve",
    "--port",
    "0",
    "--token",
    "t0",
    "--allow-origin",
    "http://app.example:5173",
    "--data-dir",
    join(scratchDir(), "state"),
  ]);
  await waitFor(server, () => /Stop with Ctrl-C/.test(server.stdout().toString()), "serve printed its instructions");
  const out = server.stdout().toString();
  expect(out).toContain("web pages of http://app.example:5173 may open sessions");
  const url = /^listening on (\S+)$/m.exec(out)?.[1] as string;
  const offered = `${SUBPROTOCOL}, ${encodeBearerSubprotocol("t0")}`;
  expect(await upgradeStatus(url, offered, "http://app.example:5173")).toBe(101);
  expect(await upgradeStatus(url, offered, "http://evil.example")).toBe(403);
  server.child.kill("SIGTERM");
  expect((await server.done).code).toBe(EXIT.success);

  // Without the flag and without the console, the entry is no credential.
  const plain = start(["serve", "--port", "0", "--token", "t0", "--no-console", "--data-dir", join(scratchDir(), "plain")]);
  await waitFor(plain, () => /^listening on /m.test(plain.stdout().toString()), "serve listened");
  const plainUrl = /^listening on (\S+)$/m.exec(plain.stdout().toString())?.[1] as string;
  expect(await upgradeStatus(plainUrl, offered, "http://app.example:5173")).toBe(401);
  expect((await get(`${plainUrl}/`)).status).toBe(404);
  expect(plain.stdout().toString()).not.toContain("web console");
  plain.child.kill("SIGTERM");
  await plain.done;
});

function get(url: string): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url);
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"], body }));
    });
    req.on("error", reject);
    req.end();
  });
}

it("serves the web console at / by default, and allows its own origin (loopback: also localhost) and no other", async () => {
  const server = start(["serve", "--port", "0", "--token", "t0", "--data-dir", join(scratchDir(), "state")]);
  await waitFor(server, () => /Stop with Ctrl-C/.test(server.stdout().toString()), "serve printed its instructions");
  const out = server.stdout().toString();
  const url = /^listening on (\S+)$/m.exec(out)?.[1] as string;
  expect(out).toContain(`web console ${url}/ (sign in with a token)`);
  const page = await get(`${url}/`);
  expect(page.status).toBe(200);
  expect(page.type).toBe("text/html; charset=utf-8");
  expect(page.body).toContain("<title>golem-stream console</title>");
  const script = /src="\.?(\/assets\/[^"]+\.js)"/.exec(page.body)?.[1] as string;
  expect((await get(`${url}${script}`)).status).toBe(200);
  const offered = `${SUBPROTOCOL}, ${encodeBearerSubprotocol("t0")}`;
  expect(await upgradeStatus(url, offered, url)).toBe(101);
  expect(await upgradeStatus(url, offered, url.replace("127.0.0.1", "localhost"))).toBe(101);
  expect(await upgradeStatus(url, offered, "http://evil.example")).toBe(403);
  server.child.kill("SIGTERM");
  expect((await server.done).code).toBe(EXIT.success);
});

it("--detached-timeout: an invocation whose client vanished is given up once it has passed; the checkpoint's resume reads the cancel", async () => {
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(
    ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-format", "json", "--detached-timeout", "1s"],
    dataDir,
  );
  try {
    const checkpoint = join(scratchDir(), "count.ckpt");
    const invoked = start(
      ["invoke", "echo", "count", "-c", '{"name":"x"}', "100000", "20", "--checkpoint", checkpoint, "--checkpoint-interval", "0"],
      { env: server.env },
    );
    await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 2, "items arrived");
    // The client vanishes without a word: no cancel, no detach.
    invoked.child.kill("SIGKILL");
    await invoked.done;
    await waitFor(
      server.running,
      () => /"event":"session\.given-up"/.test(server.running.stderr().toString()),
      "the server gave the invocation up",
    );
    const resumed = await run(["resume", checkpoint], { env: server.env });
    expect(resumed.stderr).toMatch(/transport-detached/);
  } finally {
    await server.stop();
  }
}, 30_000);

it("--detached-timeout refuses what a timer cannot wait for", async () => {
  const result = await run(["serve", "--port", "0", "--token", TOKEN, "--data-dir", join(scratchDir(), "s"), "--detached-timeout", "30d"]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toMatch(/--detached-timeout.*from 1s to 24d/);
});
