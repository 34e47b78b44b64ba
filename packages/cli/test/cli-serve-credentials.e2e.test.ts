/**
 * `serve` tells how its credentials are kept, as a real process: a token on
 * the command line (visible in `ps`) and a token shorter than 16 characters
 * are warned about, a keyring or token file readable by group or others is
 * warned about, and refused with `--strict-permissions`. Well kept
 * credentials get no warning. A cluster node is refused without credentials
 * given: the token it would generate no other node knows.
 */
import { chmodSync, existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServe } from "./support/processes.js";

function keyringFile(dir: string, mode: number): string {
  const path = join(dir, "keyring.json");
  writeFileSync(path, Keyring.generate().exportKeyringJson());
  chmodSync(path, mode);
  return path;
}

it("warns for --token, a short token and a keyring or token file others can read", async () => {
  const dir = scratchDir();
  const keyring = keyringFile(dir, 0o644);
  const tokens = join(dir, "tokens");
  writeFileSync(tokens, "a-token-long-enough-to-keep\n");
  chmodSync(tokens, 0o640);
  const server = await startServe([
    "--port",
    "0",
    "--data-dir",
    join(dir, "state"),
    "--keyring",
    keyring,
    "--token",
    "short",
    "--token-file",
    tokens,
    "--no-console",
  ]);
  try {
    const banner = server.running.stdout().toString();
    expect(banner).toMatch(/WARNING: --token puts the bearer token in the process list.*--token-file FILE or the GOLEM_STREAM_TOKEN/);
    expect(banner).toContain("WARNING: a bearer token from --token has 5 characters, short enough to guess");
    expect(banner).toContain(`WARNING: the keyring ${keyring} is readable by group or others (mode 0644)`);
    expect(banner).toContain(`WARNING: the token file ${tokens} is readable by group or others (mode 0640)`);
    expect(banner).not.toContain("a-token-long-enough-to-keep");
  } finally {
    await server.stop();
  }
  expect(server.running.stderr().toString()).toContain('"event":"credentials.weak"');
});

it("--strict-permissions refuses to start with a keyring others can read", async () => {
  const dir = scratchDir();
  const keyring = keyringFile(dir, 0o604);
  const result = await run(["serve", "--port", "0", "--data-dir", join(dir, "state"), "--keyring", keyring, "--strict-permissions"], {
    env: { GOLEM_STREAM_TOKEN: "a-token-long-enough-to-keep" },
  });
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr.toString()).toContain(`the keyring ${keyring} is readable by group or others (mode 0604)`);
  expect(result.stderr.toString()).toContain("--strict-permissions");
});

it("well kept credentials get no warning", async () => {
  const dir = scratchDir();
  const keyring = keyringFile(dir, 0o600);
  const server = await startServe(
    ["--port", "0", "--data-dir", join(dir, "state"), "--keyring", keyring, "--strict-permissions", "--no-console"],
    "",
    {
      env: { GOLEM_STREAM_TOKEN: "a-token-long-enough-to-keep" },
    },
  );
  try {
    expect(server.running.stdout().toString()).not.toContain("WARNING");
  } finally {
    await server.stop();
  }
});

it("keeps the principal secret next to the keyring (cluster nodes share it with the keyring), 0600", async () => {
  const dir = scratchDir();
  const keyring = keyringFile(dir, 0o600);
  const state = join(dir, "state");
  const server = await startServe(["--port", "0", "--data-dir", state, "--keyring", keyring, "--no-console"], "", {
    env: { GOLEM_STREAM_TOKEN: "a-token-long-enough-to-keep" },
  });
  await server.stop();
  expect(statSync(join(dir, "principal-secret")).mode & 0o777).toBe(0o600);
  expect(statSync(join(dir, "principal-secret")).size).toBe(32);
  expect(existsSync(join(state, "principal-secret"))).toBe(false);
});

it("a cluster node without --token, --token-file, $GOLEM_STREAM_TOKEN or --jwt-jwks is a usage error, before anything connects or is written", async () => {
  const dataDir = join(scratchDir(), "node");
  // Nothing listens on port 1: had the node tried to connect, the error would name the store.
  const result = await run(["serve", "--port", "0", "--store", "postgres://u@127.0.0.1:1/db", "--data-dir", dataDir]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toMatch(
    /^golem-stream: a cluster node generates no token \(the other nodes would refuse it\): give every node the same --token-file FILE \(or --token, \$GOLEM_STREAM_TOKEN\) or --jwt-jwks$/m,
  );
  expect(existsSync(join(dataDir, "bearer-token"))).toBe(false);
  // A token from the environment is one every node can be given: the node goes on to its store.
  const withToken = await run(["serve", "--port", "0", "--store", "postgres://u@127.0.0.1:1/db", "--data-dir", dataDir], {
    env: { GOLEM_STREAM_TOKEN: "a-token-every-node-is-given" },
  });
  expect(withToken.code).toBe(EXIT.usage);
  expect(withToken.stderr).toMatch(/cannot use the store postgres:\/\/u@127\.0\.0\.1:1\/db/);
}, 30_000);
