/**
 * makeDirectory, the CLI's `mkdir -p`: each missing level made once with the mode, the levels
 * it made told back, and an error for a level that cannot be made, where Node's recursive mkdir loops forever (`/proc/nope`).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { makeDirectory } from "../src/make-directory.js";

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

it("makes every missing level with the mode, and leaves a level that was there as it is", async () => {
  const root = scratch();
  chmodSync(root, 0o755);
  const path = join(root, "a", "b", "c");
  // The levels it made, topmost first: removing them, deepest first, undoes the call (a failed serve start does).
  expect(await makeDirectory(path, 0o700)).toEqual([join(root, "a"), join(root, "a", "b"), path]);
  for (const level of [join(root, "a"), join(root, "a", "b"), path]) expect(modeOf(level), level).toBe("700");
  expect(modeOf(root)).toBe("755");
  // Already there: nothing to do, nothing made, and no error.
  expect(await makeDirectory(path, 0o700)).toEqual([]);
  expect(await makeDirectory(`${path}/`, 0o700)).toEqual([]);
  expect(await makeDirectory(join(path, "d"), 0o700)).toEqual([join(path, "d")]);
});

it("fails with mkdir's error when a file is in the way", async () => {
  const root = scratch();
  const file = join(root, "file");
  writeFileSync(file, "");
  await expect(makeDirectory(file, 0o700)).rejects.toMatchObject({ code: "EEXIST" });
  await expect(makeDirectory(join(file, "below"), 0o700)).rejects.toMatchObject({ code: "ENOTDIR" });
  mkdirSync(join(root, "dir"));
  await expect(makeDirectory(join(root, "dir", "file-in-dir"), 0o700)).resolves.toEqual([join(root, "dir", "file-in-dir")]);
});

it("fails where mkdir answers ENOENT under a parent that exists (/proc), instead of trying forever", async () => {
  await expect(makeDirectory("/proc/golem-stream-nope/data", 0o700)).rejects.toMatchObject({ code: "ENOENT" });
  await expect(makeDirectory("/proc/golem-stream-nope", 0o700)).rejects.toMatchObject({ code: "ENOENT" });
});
