/**
 * A bug (anything but a CliError) is reported with its stack and exit 70.
 * The executable is a bundle whose source maps Node reads only on request,
 * so the report says how to see the stack in the TypeScript sources.
 */
import { PassThrough } from "node:stream";
import { afterEach, expect, it } from "vitest";
import { EXIT_INTERNAL } from "../src/exit-codes.js";
import type { CliIo } from "../src/io/cli-io.js";
import { runCli } from "../src/program.js";

const sourceMapsAtStart = process.sourceMapsEnabled;
afterEach(() => process.setSourceMapsEnabled(sourceMapsAtStart));

/** An io whose environment throws on every read: `types` hits it before any network call. */
function brokenIo(): { io: CliIo; stderr: () => string } {
  const stderr = new PassThrough();
  let text = "";
  stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const env = new Proxy<NodeJS.ProcessEnv>(
    {},
    {
      get: () => {
        throw new TypeError("the environment exploded");
      },
    },
  );
  return {
    io: { stdin: new PassThrough(), stdout: new PassThrough(), stderr, env, signal: new AbortController().signal },
    stderr: () => text,
  };
}

it("reports a bug with its stack, exit 70, and says how to map the stack to the sources", async () => {
  process.setSourceMapsEnabled(false);
  const { io, stderr } = brokenIo();
  expect(await runCli(["types"], io)).toBe(EXIT_INTERNAL);
  expect(stderr()).toMatch(/^golem-stream: internal error: TypeError: the environment exploded\n\s+at /);
  expect(stderr()).toMatch(/\ngolem-stream: NODE_OPTIONS=--enable-source-maps shows this stack in the TypeScript sources\n$/);
});

it("leaves the hint out when source maps are already on", async () => {
  process.setSourceMapsEnabled(true);
  const { io, stderr } = brokenIo();
  expect(await runCli(["types"], io)).toBe(EXIT_INTERNAL);
  expect(stderr()).toContain("internal error: TypeError: the environment exploded");
  expect(stderr()).not.toContain("--enable-source-maps");
});
