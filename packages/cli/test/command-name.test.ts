/**
 * How hints and help spell the command: `golem-stream`, `npx golem-stream` for a project's copy (run by npx, a package.json
 * script or its node_modules/.bin path), or what GOLEM_STREAM_COMMAND says (the checkout's launcher).
 */
import { expect, it } from "vitest";
import { commandName, spellCommands } from "../src/io/command-name.js";

it("is golem-stream unless GOLEM_STREAM_COMMAND names another spelling", () => {
  expect(commandName({})).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "" })).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "  " })).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "pnpm golem-stream" })).toBe("pnpm golem-stream");
});

it("is npx golem-stream when npx (or npm exec) runs it, which sets npm_command=exec and npm_lifecycle_event=npx", () => {
  expect(commandName({ npm_command: "exec", npm_lifecycle_event: "npx" })).toBe("npx golem-stream");
  expect(commandName({ npm_command: "exec" })).toBe("npx golem-stream");
  expect(commandName({ npm_lifecycle_event: "npx" })).toBe("npx golem-stream");
  expect(commandName({ npm_command: "exec", GOLEM_STREAM_COMMAND: "pnpm golem-stream" })).toBe("pnpm golem-stream");
});

it("is npx golem-stream when a package.json script runs it (npm run, pnpm run): the project's copy, not on the user's PATH", () => {
  expect(
    commandName({ npm_command: "run-script", npm_lifecycle_event: "serve", npm_execpath: "/usr/lib/node_modules/npm/bin/npm-cli.js" }),
  ).toBe("npx golem-stream");
  expect(commandName({ npm_lifecycle_event: "serve" })).toBe("npx golem-stream");
  expect(commandName({ npm_execpath: "/usr/local/lib/node_modules/pnpm/bin/pnpm.cjs" })).toBe("npx golem-stream");
  expect(commandName({ npm_lifecycle_event: "", npm_execpath: "" })).toBe("golem-stream");
  expect(commandName({ npm_lifecycle_event: "serve", GOLEM_STREAM_COMMAND: "pnpm golem-stream" })).toBe("pnpm golem-stream");
});

it("is npx golem-stream when started by its path in a project's node_modules/.bin, and golem-stream from a global install's", () => {
  expect(commandName({}, "/home/me/app/node_modules/.bin/golem-stream")).toBe("npx golem-stream");
  expect(commandName({}, "node_modules/.bin/golem-stream")).toBe("npx golem-stream");
  expect(commandName({}, "C:\\app\\node_modules\\.bin\\golem-stream")).toBe("npx golem-stream");
  expect(commandName({}, "/usr/local/bin/golem-stream")).toBe("golem-stream");
  expect(commandName({}, "/usr/local/lib/node_modules/@golem-stream/cli/dist/golem-stream.js")).toBe("golem-stream");
  expect(commandName({}, "/home/me/not_node_modules/.bin/golem-stream")).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "pnpm golem-stream" }, "/app/node_modules/.bin/golem-stream")).toBe("pnpm golem-stream");
});

it("respells command lines only: not paths, package names, longer names, option values or the program's own prefix", () => {
  const help = [
    "Usage: golem-stream [options] [command]",
    "  $ golem-stream types",
    "  $ printf 'a\\n' | golem-stream invoke echo split -c '{}' -",
    "  4    connection lost; `golem-stream resume <checkpoint>` continues",
    "  --data-dir <dir>  (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)",
    "  $ golem-stream conformance client --adapter golem-stream-conformance-client-adapter",
    "  $ golem-stream serve --jwt-audience golem-stream --jwt-issuer https://login.example.com/",
    "golem-stream: a message",
    "npm install @golem-stream/cli",
  ].join("\n");
  expect(spellCommands(help, "pnpm golem-stream").split("\n")).toEqual([
    "Usage: pnpm golem-stream [options] [command]",
    "  $ pnpm golem-stream types",
    "  $ printf 'a\\n' | pnpm golem-stream invoke echo split -c '{}' -",
    "  4    connection lost; `pnpm golem-stream resume <checkpoint>` continues",
    "  --data-dir <dir>  (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)",
    "  $ pnpm golem-stream conformance client --adapter golem-stream-conformance-client-adapter",
    "  $ pnpm golem-stream serve --jwt-audience golem-stream --jwt-issuer https://login.example.com/",
    "golem-stream: a message",
    "npm install @golem-stream/cli",
  ]);
  expect(spellCommands(help, "golem-stream")).toBe(help);
});

it("a usage error's hint is spelled as typed here: the keyring command without a keyring names `pnpm golem-stream serve`", async () => {
  const { PassThrough } = await import("node:stream");
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { runCli } = await import("../src/program.js");
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-spelling-"));
  try {
    const stderr = new PassThrough();
    let text = "";
    stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
    const io = {
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr,
      env: { GOLEM_STREAM_COMMAND: "pnpm golem-stream" },
      signal: new AbortController().signal,
    };
    const code = await runCli(["keyring", "list", "--keyring", join(dir, "missing.json")], io);
    expect(code).toBe(2);
    expect(text).toContain("`pnpm golem-stream serve --keyring <file>` creates one on its first start");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
