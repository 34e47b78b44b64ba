/**
 * `codegen -o FILE` writes what FILE stands for, as `cp` and a compiler do (io/output-file.ts): a
 * symlink is written through and stays a link, a FIFO or a device is written in place and stays
 * what it was. Renaming a temporary file over the path had replaced each of them with a file.
 */
import { execFileSync, spawn } from "node:child_process";
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServer, track } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  await server.kill();
});

const codegen = (out: string) => run(["codegen", "-o", out], { env: server.env });
const MODULE = /defineAgentType\(/;

it("a symlink is written through: the link stays, its target gets the module", async () => {
  const dir = scratchDir();
  writeFileSync(join(dir, "real.ts"), "// old\n");
  symlinkSync("real.ts", join(dir, "link.ts"));
  const done = await codegen(join(dir, "link.ts"));
  expect(done.code, done.stderr).toBe(EXIT.success);
  expect(lstatSync(join(dir, "link.ts")).isSymbolicLink()).toBe(true);
  expect(readFileSync(join(dir, "real.ts"), "utf8")).toMatch(MODULE);
});

it("a link to a file not there yet creates it in the link's target directory, as `>` does", async () => {
  const dir = scratchDir();
  mkdirSync(join(dir, "generated"));
  symlinkSync(join("generated", "contracts.ts"), join(dir, "link.ts"));
  const done = await codegen(join(dir, "link.ts"));
  expect(done.code, done.stderr).toBe(EXIT.success);
  expect(lstatSync(join(dir, "link.ts")).isSymbolicLink()).toBe(true);
  expect(readFileSync(join(dir, "generated", "contracts.ts"), "utf8")).toMatch(MODULE);
});

it("a FIFO is written in place: its reader gets the module, and it stays a FIFO", async () => {
  const fifo = join(scratchDir(), "fifo.ts");
  execFileSync("mkfifo", [fifo]);
  // The reader first: codegen's open of the FIFO waits for it, as `cp` does.
  const reader = track(spawn("cat", [fifo], { stdio: ["ignore", "pipe", "inherit"] }));
  let read = "";
  reader.stdout.on("data", (chunk: Buffer) => (read += chunk.toString("utf8")));
  const readerDone = new Promise((resolve) => reader.on("close", resolve));
  const done = await codegen(fifo);
  expect(done.code, done.stderr).toBe(EXIT.success);
  // Checked before waiting for the reader, which a replaced FIFO leaves waiting for good.
  expect(lstatSync(fifo).isFIFO()).toBe(true);
  await readerDone;
  expect(read).toMatch(MODULE);
});

/** A character device like /dev/full (1, 7) in a scratch folder: made where mknod is allowed (root), else the test skips. */
function fullDevice(): string | undefined {
  const path = join(scratchDir(), "full");
  try {
    execFileSync("mknod", [path, "c", "1", "7"], { stdio: "ignore" });
    return path;
  } catch {
    return undefined;
  }
}

it("a device is written in place: a full one fails with 74 and stays a device", async (context) => {
  const device = fullDevice();
  if (device === undefined) return context.skip();
  const done = await codegen(device);
  expect(done.code).toBe(EXIT.outputFailed);
  expect(done.stderr).toMatch(/cannot write .*full: .*ENOSPC/);
  expect(lstatSync(device).isCharacterDevice()).toBe(true);
});
