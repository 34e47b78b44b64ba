/**
 * makeDirectorySync, the store's `mkdir -p`: each missing level made once with the mode, and an
 * error for a level that cannot be made, where Node's recursive mkdir loops forever
 * (`/proc/nope`). SqliteSessionStore, the embedded server and its keyring and principal-secret
 * files make their directories with it.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { makeDirectorySync } from "../src/store/make-directory.js";
import { loadOrCreateKeyring, loadOrCreatePrincipalSecret, SqliteSessionStore, startEmbeddedServer } from "../src/index.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "make-directory-"));
  dirs.push(dir);
  return dir;
}
const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8);

it("makes every missing level with the mode, and leaves a level that was there as it is", () => {
  const root = scratch();
  chmodSync(root, 0o755);
  const path = join(root, "a", "b", "c");
  makeDirectorySync(path, 0o700);
  for (const level of [join(root, "a"), join(root, "a", "b"), path]) expect(modeOf(level), level).toBe("700");
  expect(modeOf(root)).toBe("755");
  // Already there: nothing to do, and no error.
  makeDirectorySync(path, 0o700);
  makeDirectorySync(`${path}/`, 0o700);
});

it("fails with mkdir's error when a file is in the way", () => {
  const file = join(scratch(), "file");
  writeFileSync(file, "");
  expect(() => makeDirectorySync(file, 0o700)).toThrow(expect.objectContaining({ code: "EEXIST" }));
  expect(() => makeDirectorySync(join(file, "below"), 0o700)).toThrow(expect.objectContaining({ code: "ENOTDIR" }));
});

it("fails where mkdir answers ENOENT under a parent that exists (/proc), instead of trying forever", async () => {
  expect(() => makeDirectorySync("/proc/golem-stream-nope/data", 0o700)).toThrow(expect.objectContaining({ code: "ENOENT" }));
  expect(() => new SqliteSessionStore({ dataDir: "/proc/golem-stream-nope" })).toThrow(expect.objectContaining({ code: "ENOENT" }));
  expect(() => loadOrCreateKeyring("/proc/golem-stream-nope")).toThrow(expect.objectContaining({ code: "ENOENT" }));
  expect(() => loadOrCreatePrincipalSecret("/proc/golem-stream-nope")).toThrow(expect.objectContaining({ code: "ENOENT" }));
  await expect(startEmbeddedServer({ dataDir: "/proc/golem-stream-nope", tokens: ["a-token-of-sixteen-chars"] })).rejects.toMatchObject({
    code: "ENOENT",
  });
});
