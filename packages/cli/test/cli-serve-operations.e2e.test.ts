/**
 * `golem-stream serve` operations as a real process: `--metrics` serves
 * Prometheus text that moves as the CLI invokes, `/healthz` and `/readyz`
 * are always there, and stderr carries one JSON event per line (stderr is a
 * pipe, not a terminal) with no token or key in any of them.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, run, scratchDir, start, startServe, waitFor } from "./support/processes.js";

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !predicate(); waited += 20) {
    if (waited > 20_000) throw new Error(`gave up waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function sample(text: string, line: RegExp): number {
  const match = line.exec(text);
  return match === null ? 0 : Number(match[1]);
}

it("serve --metrics: counters move as invocations run; health and readiness answer; JSON log lines hold no secret", async () => {
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--metrics", "--log-level", "debug"], dataDir);
  try {
    expect(server.running.stdout().toString()).toContain(`metrics ${server.url}/metrics`);
    expect(await get(`${server.url}/healthz`)).toMatchObject({ status: 200 });
    expect(await get(`${server.url}/readyz`)).toMatchObject({ status: 200 });
    const before = await get(`${server.url}/metrics`);
    expect(before.status).toBe(200);
    expect(sample(before.body, /^golem_stream_sessions_started_total (\S+)$/m)).toBe(0);
    // --metrics in serve adds the process metrics too.
    expect(before.body).toMatch(/^process_cpu_user_seconds_total /m);

    const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "3", "0"], { env: server.env });
    expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1, 2]);
    const digested = await run(["invoke", "echo", "digest", "-c", '{"name":"x"}', "-"], { env: server.env, stdin: Buffer.alloc(1000, 7) });
    expect(digested.code, digested.stderr).toBe(EXIT.success);

    const after = (await get(`${server.url}/metrics`)).body;
    expect(sample(after, /^golem_stream_sessions_started_total (\S+)$/m)).toBe(2);
    expect(sample(after, /^golem_stream_sessions_finished_total\{outcome="success"\} (\S+)$/m)).toBe(2);
    expect(sample(after, /^golem_stream_attachments_total\{operation="start"\} (\S+)$/m)).toBe(2);
    expect(sample(after, /^golem_stream_output_items_total\{kind="value"\} (\S+)$/m)).toBe(3);
    expect(sample(after, /^golem_stream_input_bytes_total\{kind="u8"\} (\S+)$/m)).toBe(1000);
  } finally {
    const stopped = await server.stop();
    expect(stopped.code).toBe(EXIT.success);
  }
  const lines = server.running
    .stderr()
    .split("\n")
    .filter((line) => line !== "");
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(records.map((r) => r["msg"])).toEqual(
    expect.arrayContaining(["server started", "session started", "session finished", "stopped"]),
  );
  expect(records.every((r) => typeof r["level"] === "string" && typeof r["time"] === "string")).toBe(true);
  expect(records.filter((r) => r["event"] === "session.finish").map((r) => r["outcome"])).toEqual(["success", "success"]);
  const secret = (JSON.parse(readFileSync(join(dataDir, "keyring.json"), "utf8")) as { keys: { secret: string }[] }).keys[0]!.secret;
  for (const leak of [
    TOKEN,
    secret,
    Buffer.from(secret, "base64url").toString("hex"),
    Buffer.from(secret, "base64url").toString("base64"),
  ]) {
    expect(server.running.stderr()).not.toContain(leak);
  }
});

it("serve without --metrics: no /metrics, but /healthz and /readyz; --log-level warn keeps routine events off stderr", async () => {
  const dataDir = join(scratchDir(), "state");
  // The token by environment: `--token` on the command line is itself worth a warning (visible in `ps`).
  const server = await startServe(["--port", "0", "--data-dir", dataDir, "--log-level", "warn"], dataDir, {
    env: { GOLEM_STREAM_TOKEN: TOKEN },
  });
  try {
    expect((await get(`${server.url}/metrics`)).status).toBe(404);
    expect((await get(`${server.url}/healthz`)).status).toBe(200);
    expect(JSON.parse((await get(`${server.url}/readyz`)).body)).toMatchObject({ status: "ready" });
    await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"], { env: server.env });
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
  expect(server.running.stderr()).toBe("");
});

it("--log-file: the log goes to the file (appended, 0600), not stderr; the banner stays on stdout", async () => {
  const dataDir = join(scratchDir(), "state");
  const logFile = join(scratchDir(), "serve.log");
  writeFileSync(logFile, "an earlier line\n");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-file", logFile], dataDir);
  try {
    await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"], { env: server.env });
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
  expect(server.running.stderr()).toBe("");
  expect(server.running.stdout().toString()).toMatch(/^listening on /);
  const [earlier, ...records] = readFileSync(logFile, "utf8").trim().split("\n");
  expect(earlier).toBe("an earlier line");
  expect(records.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(
    expect.arrayContaining(["server started", "session started", "session finished", "stopped"]),
  );
  const unopenable = await run([
    "serve",
    "--port",
    "0",
    "--token",
    TOKEN,
    "--data-dir",
    dataDir,
    "--log-file",
    join(scratchDir(), "missing", "serve.log"),
  ]);
  expect(unopenable.code).toBe(EXIT.usage);
  expect(unopenable.stderr).toMatch(/^golem-stream: cannot open --log-file .*serve\.log: ENOENT/);
});

it("--log-file creates the file private (0600)", async () => {
  const dataDir = join(scratchDir(), "state");
  const logFile = join(scratchDir(), "new.log");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-file", logFile], dataDir);
  expect((await server.stop()).code).toBe(EXIT.success);
  expect(statSync(logFile).mode & 0o777).toBe(0o600);
});

it("every JSON log line has an event: start, a failed invocation, a refused token, a restart's recovery, the stop", async () => {
  const dataDir = join(scratchDir(), "state");
  const serveArgs = ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "debug", "--log-format", "json"];
  const first = await startServe(serveArgs, dataDir);
  const stderr: string[] = [];
  try {
    // An input read from stdin cannot be continued by another process: resume cancels it
    // (source-unavailable) and the agent fails the invocation (the server's `invocation failed`).
    const checkpoint = join(scratchDir(), "stdin.ckpt");
    const cli = start(["invoke", "echo", "digest", "-c", '{"name":"x"}', "-", "--checkpoint", checkpoint], {
      env: first.env,
      stdin: "some bytes",
      openStdin: true,
    });
    await until(() => existsSync(checkpoint) && readFileSync(checkpoint, "utf8").includes("sessionToken"), "the start was accepted");
    cli.child.kill("SIGKILL");
    await cli.done;
    const resumed = await run(["resume", checkpoint], { env: first.env });
    expect(resumed.code, resumed.stderr).toBe(EXIT.invocationFailed);
    // A wrong token is refused at the catalogue, before any session: logged and counted there.
    const refused = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"], {
      env: { ...first.env, GOLEM_STREAM_TOKEN: "wrong-token-0123456789" },
    });
    expect(refused.code).toBe(EXIT.rejected);
    // A crash with an invocation running: the next start finishes it as interrupted by a restart.
    const counting = start(
      ["invoke", "echo", "count", "-c", '{"name":"x"}', "1000", "5", "--checkpoint", join(scratchDir(), "count.ckpt")],
      { env: first.env },
    );
    await waitFor(counting, () => itemsOf(counting.stdout(), "$").length >= 2, "2 items were printed");
    first.running.child.kill("SIGKILL");
    stderr.push((await first.running.done).stderr);
    counting.child.kill("SIGKILL");
  } finally {
    first.running.child.kill("SIGKILL");
  }
  const second = await startServe(serveArgs, dataDir);
  try {
    await waitFor(
      second.running,
      () => second.running.stderr().includes("recovered sessions a restart interrupted"),
      "the restart's recovery was logged",
    );
  } finally {
    stderr.push((await second.stop()).stderr);
  }
  const records = stderr
    .join("")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(records.filter((r) => typeof r["event"] !== "string")).toEqual([]);
  expect(records.filter((r) => r["event"] === "attach.rejected")).toEqual([
    expect.objectContaining({ operation: "discover", code: "unauthenticated" }),
  ]);
  const events = new Set(records.map((r) => r["event"]));
  for (const event of ["server.start", "invocation.failed", "recovery.interrupted", "server.stopping", "server.stop"])
    expect(events).toContain(event);
});
