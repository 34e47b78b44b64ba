/**
 * `golem-stream serve --config FILE` as a service manager runs it: a real
 * process started from another working directory, its options from a JSON
 * file whose relative paths are the file's, a flag beside it winning, and a
 * mistake in the file stopping serve before it listens, and a value from the
 * file that serve refuses named by the file and its member.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, run, scratchDir, startServe } from "./support/processes.js";

it("serve --config: options from the file, paths relative to it, a flag on the command line winning", async () => {
  const etc = join(scratchDir(), "etc");
  mkdirSync(etc);
  writeFileSync(join(etc, "tokens"), `${TOKEN}\n`, { mode: 0o600 });
  writeFileSync(
    join(etc, "serve.json"),
    JSON.stringify({ port: 0, "token-file": "tokens", "data-dir": "state", metrics: true, console: false, "log-level": "debug" }),
  );
  const elsewhere = scratchDir();
  const server = await startServe(["--config", join(etc, "serve.json"), "--log-level", "warn"], join(etc, "state"), { cwd: elsewhere });
  try {
    const banner = server.running.stdout().toString();
    expect(banner).toContain(`data directory ${join(etc, "state")}\n`);
    expect(banner).toContain(`metrics ${server.url}/metrics`);
    expect(banner).not.toContain("web console");
    const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "3", "0"], { env: server.env });
    expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1, 2]);
    // The file's "debug" would have logged each session's start; the flag's warn does not.
    expect(server.running.stderr()).not.toContain('"event":"session.start"');
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});

it("serve --config with a member serve does not know: exit 2 naming the file and the member, nothing listens", async () => {
  const file = join(scratchDir(), "serve.json");
  writeFileSync(file, JSON.stringify({ port: 0, "max-conections": 100 }));
  const result = await run(["serve", "--config", file, "--token", TOKEN, "--data-dir", join(scratchDir(), "state")]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toContain(`${file}: "max-conections" is not an option of serve; did you mean "max-connections"?`);
  expect(result.stdout.toString()).toBe("");
});

it("a value the file gave that serve refuses is named by the file and its member; the same value as a flag by the flag", async () => {
  const etc = scratchDir();
  const file = join(etc, "serve.json");
  writeFileSync(file, JSON.stringify({ port: 0, "token-file": "missing-tokens" }));
  const state = join(scratchDir(), "state");
  const fromFile = await run(["serve", "--config", file, "--data-dir", state]);
  expect(fromFile.code).toBe(EXIT.usage);
  expect(fromFile.stderr).toBe(`golem-stream: ${file}: "token-file": ${join(etc, "missing-tokens")}: cannot read it (ENOENT)\n`);
  const fromFlag = await run(["serve", "--config", file, "--token-file", join(etc, "also-missing"), "--data-dir", state]);
  expect(fromFlag.stderr).toBe(`golem-stream: --token-file ${join(etc, "also-missing")}: cannot read it (ENOENT)\n`);
});
