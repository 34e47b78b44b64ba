/**
 * Records and directories for the `SessionStore` tests: a session and a
 * stream with plausible values (shared with other stores in
 * `src/testing/`), and temporary data directories removed after each test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dirs: string[] = [];
export function sqliteDir(): string {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-store-"));
  dirs.push(dataDir);
  return dataDir;
}

/** For `afterEach`: removes the directories `sqliteDir` made. */
export function removeStoreDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export { bytes, session, stream } from "../../src/testing/store-records.js";
