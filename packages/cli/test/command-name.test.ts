/** How hints and help spell the command: `golem-stream`, or what GOLEM_STREAM_COMMAND says (the checkout's launcher). */
import { expect, it } from "vitest";
import { commandName, spellCommands } from "../src/io/command-name.js";

it("is golem-stream unless GOLEM_STREAM_COMMAND names another spelling", () => {
  expect(commandName({})).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "" })).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "  " })).toBe("golem-stream");
  expect(commandName({ GOLEM_STREAM_COMMAND: "pnpm golem-stream" })).toBe("pnpm golem-stream");
});

it("respells command lines only: not paths, package names, longer names or the program's own prefix", () => {
  const help = [
    "Usage: golem-stream [options] [command]",
    "  $ golem-stream types",
    "  $ printf 'a\\n' | golem-stream invoke echo split -c '{}' -",
    "  4    connection lost; `golem-stream resume <checkpoint>` continues",
    "  --data-dir <dir>  (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)",
    "  $ golem-stream conformance client --adapter golem-stream-conformance-client-adapter",
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
    "golem-stream: a message",
    "npm install @golem-stream/cli",
  ]);
  expect(spellCommands(help, "golem-stream")).toBe(help);
});
