/**
 * What a failed `serve` start removes (data-dir.ts, `StartCleanup`): the directories it made,
 * deepest first, each only while empty, so that nothing another process put there meanwhile
 * (a second `serve` on the same path, another program in a parent) is ever deleted.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { StartCleanup, createDataDir } from "../src/data-dir.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});
function scratch(): string {
  const root = mkdtempSync(join(tmpdir(), "start-cleanup-"));
  roots.push(root);
  return root;
}

it("removes every level the start made while they are empty, and nothing that was there", async () => {
  const root = scratch();
  const dataDir = join(root, "a", "b", "state");
  const cleanup = new StartCleanup();
  cleanup.created(await createDataDir(dataDir));
  await cleanup.undo();
  expect(existsSync(join(root, "a"))).toBe(false);
  expect(existsSync(root)).toBe(true);
});

it("keeps a level that holds a file put there meanwhile, and every level above it", async () => {
  const root = scratch();
  const dataDir = join(root, "shared", "golem", "state");
  const cleanup = new StartCleanup();
  cleanup.created(await createDataDir(dataDir));
  writeFileSync(join(root, "shared", "notes.txt"), "another program's\n");
  await cleanup.undo();
  expect(existsSync(join(root, "shared", "golem"))).toBe(false);
  expect(existsSync(join(root, "shared", "notes.txt"))).toBe(true);
  // Another serve's files in the data directory itself: nothing is removed.
  const other = join(root, "other", "state");
  const second = new StartCleanup();
  second.created(await createDataDir(other));
  writeFileSync(join(other, "keyring.json"), "{}\n");
  await second.undo();
  expect(existsSync(join(other, "keyring.json"))).toBe(true);
});

it("removes nothing once the server listens, or when the directory was there", async () => {
  const root = scratch();
  const dataDir = join(root, "state");
  const listened = new StartCleanup();
  listened.created(await createDataDir(dataDir));
  listened.listening();
  await listened.undo();
  expect(existsSync(dataDir)).toBe(true);
  const existing = new StartCleanup();
  existing.created(await createDataDir(dataDir));
  await existing.undo();
  expect(existsSync(dataDir)).toBe(true);
});
