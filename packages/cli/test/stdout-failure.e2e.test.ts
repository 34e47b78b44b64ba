/**
 * A command whose stdout cannot be written (a full disk: /dev/full) does not report success: it
 * says so on stderr and exits 74, as the exit-code table says. invoke and resume handle their
 * own output (session-runner.ts, its tests); this is every other command's path (bin.ts).
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { EXIT } from "../src/exit-codes.js";
import { BIN, run, scratchDir } from "./support/processes.js";

const FULL = "/dev/full";
if (!existsSync(FULL)) console.log(`stdout-failure: no ${FULL} on this platform; the test skips`);

it.skipIf(!existsSync(FULL))(
  "keyring list with stdout on a full device: exit 74 and a message, where a writable stdout exits 0",
  async () => {
    const keyring = join(scratchDir(), "keyring.json");
    writeFileSync(keyring, Keyring.generate("k1").exportKeyringJson(), { mode: 0o600 });
    expect((await run(["keyring", "list", "--keyring", keyring])).code).toBe(EXIT.success);
    const full = openSync(FULL, "w");
    try {
      const child = spawn(process.execPath, [BIN, "keyring", "list", "--keyring", keyring], { stdio: ["ignore", full, "pipe"] });
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on("close", (exit) => resolve(exit)));
      expect(code).toBe(EXIT.outputFailed);
      expect(stderr).toMatch(/^golem-stream: could not write to stdout: .*ENOSPC/m);
    } finally {
      closeSync(full);
    }
  },
);
