/**
 * `golem-stream keyring` on a real data directory, with real servers: a
 * rotation keeps old tokens verifying and signs new ones with the new key;
 * dropping the old key makes its tokens invalid after a restart. Secrets are
 * never printed, and the file stays owner-only.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, run, scratchDir, startServe, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

async function serve(dataDir: string): Promise<ServerProcess> {
  const server = await startServer(dataDir);
  servers.push(server);
  return server;
}

async function stop(server: ServerProcess): Promise<void> {
  servers.splice(servers.indexOf(server), 1);
  expect((await server.stop()).code).toBe(EXIT.success);
}

const keyIdOf = async (token: string): Promise<string> => {
  const inspected = await run(["token", "inspect", token, "--json"]);
  return (JSON.parse(inspected.stdout.toString("utf8")) as { keyId: string }).keyId;
};
const sessionTokenOf = (checkpoint: string): string =>
  (JSON.parse(readFileSync(checkpoint, "utf8")) as { sessionToken: string }).sessionToken;
const listed = async (dataDir: string) => {
  const result = await run(["keyring", "list", "--data-dir", dataDir, "--json"]);
  expect(result.code).toBe(EXIT.success);
  return JSON.parse(result.stdout.toString("utf8")) as { active: string; keys: { id: string; role: string; verifyOnly: boolean }[] };
};

it("rotate keeps old tokens valid and signs new ones with the new key; drop invalidates the old key's tokens", async () => {
  const dataDir = join(scratchDir(), "state");
  const scratch = scratchDir();
  const first = await serve(dataDir);
  const before = join(scratch, "before.ckpt");
  expect((await run(["invoke", "echo", "count", "-c", '{"name":"k"}', "2", "0", "--checkpoint", before], { env: first.env })).code).toBe(
    EXIT.success,
  );
  await stop(first);
  const original = (await listed(dataDir)).active;
  expect(await keyIdOf(sessionTokenOf(before))).toBe(original);

  const rotated = await run(["keyring", "rotate", "--key-id", "k-second", "--data-dir", dataDir]);
  expect(rotated.code).toBe(EXIT.success);
  expect(await listed(dataDir)).toEqual({
    active: "k-second",
    keys: [
      { id: "k-second", role: "active", verifyOnly: false },
      { id: original, role: "verify-only", verifyOnly: true },
    ],
  });
  const file = join(dataDir, "keyring.json");
  expect(statSync(file).mode & 0o777).toBe(0o600);
  const secrets = (JSON.parse(readFileSync(file, "utf8")) as { keys: { secret: string }[] }).keys.map((key) => key.secret);
  expect(secrets).toHaveLength(2);
  for (const secret of secrets) expect(rotated.stdout.toString("utf8") + rotated.stderr).not.toContain(secret);

  const second = await serve(dataDir);
  expect((await run(["resume", before], { env: second.env })).code).toBe(EXIT.success);
  const after = join(scratch, "after.ckpt");
  expect((await run(["invoke", "echo", "count", "-c", '{"name":"k"}', "2", "0", "--checkpoint", after], { env: second.env })).code).toBe(
    EXIT.success,
  );
  expect(await keyIdOf(sessionTokenOf(after))).toBe("k-second");
  await stop(second);

  expect((await run(["keyring", "drop", original, "--data-dir", dataDir])).code).toBe(EXIT.success);
  const third = await serve(dataDir);
  const refused = await run(["resume", before], { env: third.env });
  expect(refused.code).toBe(EXIT.rejected);
  expect(refused.stderr).toMatch(/invalid-token/);
  expect((await run(["resume", after], { env: third.env })).code).toBe(EXIT.success);
});

it("rotate --staged adds a key that verifies but signs nothing; activate makes it sign; list shows each role", async () => {
  const dataDir = join(scratchDir(), "state");
  const scratch = scratchDir();
  await stop(await serve(dataDir));
  const original = (await listed(dataDir)).active;

  const staged = await run(["keyring", "rotate", "--staged", "--key-id", "k-next", "--data-dir", dataDir]);
  expect(staged.stderr).toBe("");
  expect(staged.code).toBe(EXIT.success);
  expect(staged.stdout.toString("utf8")).toMatch(new RegExp(`^k-next\tstaged .*\n${original}\tactive\n[^]*keyring activate k-next`));
  expect(await listed(dataDir)).toEqual({
    active: original,
    keys: [
      { id: original, role: "active", verifyOnly: false },
      { id: "k-next", role: "staged", verifyOnly: true },
    ],
  });
  expect((await run(["keyring", "list", "--data-dir", dataDir])).stdout.toString("utf8")).toBe(`${original}\tactive\nk-next\tstaged\n`);
  const file = join(dataDir, "keyring.json");
  expect(statSync(file).mode & 0o777).toBe(0o600);
  // One staged key at a time; the file is left as it was.
  const contents = readFileSync(file, "utf8");
  const again = await run(["keyring", "rotate", "--staged", "--data-dir", dataDir]);
  expect(again.code).toBe(EXIT.usage);
  expect(again.stderr).toMatch(/cannot stage a key: k-next is already staged/);
  expect(readFileSync(file, "utf8")).toBe(contents);

  // The server loads the staged file and still signs with the active key.
  const second = await serve(dataDir);
  const before = join(scratch, "before.ckpt");
  expect((await run(["invoke", "echo", "count", "-c", '{"name":"k"}', "2", "0", "--checkpoint", before], { env: second.env })).code).toBe(
    EXIT.success,
  );
  expect(await keyIdOf(sessionTokenOf(before))).toBe(original);
  await stop(second);

  const activated = await run(["keyring", "activate", "k-next", "--data-dir", dataDir]);
  expect(activated.stderr).toBe("");
  expect(activated.code).toBe(EXIT.success);
  expect(activated.stdout.toString("utf8")).toMatch(
    new RegExp(`^k-next\tactive [(]was staged[)]\n${original}\tverify-only [(]was active[)]\n`),
  );
  expect((await run(["keyring", "list", "--data-dir", dataDir])).stdout.toString("utf8")).toBe(
    `${original}\tverify-only\nk-next\tactive\n`,
  );
  const secrets = (JSON.parse(readFileSync(file, "utf8")) as { keys: { secret: string }[] }).keys.map((key) => key.secret);
  for (const secret of secrets) expect(staged.stdout.toString("utf8") + activated.stdout.toString("utf8")).not.toContain(secret);
  for (const [keyId, message] of [
    ["k-next", /cannot activate k-next: the key is already active/],
    ["k-nowhere", /cannot activate k-nowhere: no such key/],
  ] as const) {
    const refused = await run(["keyring", "activate", keyId, "--data-dir", dataDir]);
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toMatch(message);
  }

  const third = await serve(dataDir);
  expect((await run(["resume", before], { env: third.env })).code).toBe(EXIT.success);
  const after = join(scratch, "after.ckpt");
  expect((await run(["invoke", "echo", "count", "-c", '{"name":"k"}', "2", "0", "--checkpoint", after], { env: third.env })).code).toBe(
    EXIT.success,
  );
  expect(await keyIdOf(sessionTokenOf(after))).toBe("k-next");
});

it("refuses to drop the active key or an unknown one, and says where a missing keyring comes from", async () => {
  const dataDir = join(scratchDir(), "state");
  const missing = await run(["keyring", "list", "--data-dir", dataDir]);
  expect(missing.code).toBe(EXIT.usage);
  expect(missing.stderr).toMatch(/golem-stream serve. creates one/);

  await stop(await serve(dataDir));
  const { active } = await listed(dataDir);
  const before = readFileSync(join(dataDir, "keyring.json"), "utf8");
  for (const keyId of [active, "k-nowhere"]) {
    const refused = await run(["keyring", "drop", keyId, "--data-dir", dataDir]);
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toMatch(/cannot drop/);
  }
  const clash = await run(["keyring", "rotate", "--key-id", active, "--data-dir", dataDir]);
  expect(clash.code).toBe(EXIT.usage);
  expect(readFileSync(join(dataDir, "keyring.json"), "utf8")).toBe(before);
  const plain = await run(["keyring", "list", "--data-dir", dataDir]);
  expect(plain.stdout.toString("utf8")).toBe(`${active}\tactive\n`);
});

it("serve --keyring: the keyring the CLI loads is one the server accepts (the bundled executable shares @golem-stream/tokens with it)", async () => {
  // The server checks `instanceof Keyring`; a copy of the tokens package inside the bundle
  // would fail every session with "expected a Keyring" (docs/protocol/cli.md, "Start-up").
  const dataDir = scratchDir();
  const server = await startServe(
    ["--port", "0", "--token", TOKEN, "--keyring", join(dataDir, "shared-keyring.json"), "--data-dir", dataDir, "--log-level", "warn"],
    dataDir,
  );
  servers.push(server);
  const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"k"}', "2", "0", "--retries", "0"], { env: server.env });
  expect(invoked.stderr).toBe("");
  expect(invoked.code).toBe(EXIT.success);
});
