/**
 * `FileSync` (store/sqlite-database.ts): each sync of a store file runs on a handle no other sync
 * is using at that moment. Linux reports a failed writeback to the next sync of each open file
 * once; two syncs at once on one handle could split that report, one failing while the other
 * succeeds over the lost pages. Handles are reused from one sync to the next and closed with it.
 */
import { fstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { FileSync } from "../src/store/sqlite-database.js";
import { datasyncsDuring } from "./support/datasync-spy.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratchFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-file-sync-"));
  dirs.push(dir);
  const path = join(dir, "wal");
  writeFileSync(path, "frames");
  return path;
}

it("runs syncs at once on handles of their own, reuses them one after another, and closes them all", async () => {
  const file = new FileSync(scratchFile());
  const { synced, concurrent } = await datasyncsDuring(async () => {
    await Promise.all([file.sync(), file.sync(), file.sync()]);
    await file.sync();
    await file.sync();
  });
  await file.close();
  expect(concurrent).toBeGreaterThan(1);
  const atOnce = synced.slice(0, 3);
  expect(new Set(atOnce).size).toBe(3); // three syncs at once, three handles
  expect(atOnce).toContain(synced[3]); // one after another, a handle already open
  expect(synced[4]).toBe(synced[3]);
  // Closed: nothing opened since, so each descriptor is no longer valid.
  for (const fd of atOnce) expect(() => fstatSync(fd), String(fd)).toThrow(expect.objectContaining({ code: "EBADF" }));
});

it("fails a sync whose file cannot be opened, and tries again at the next", async () => {
  const path = scratchFile();
  const file = new FileSync(`${path}-missing`);
  await expect(file.sync()).rejects.toMatchObject({ code: "ENOENT" });
  writeFileSync(`${path}-missing`, "");
  await expect(file.sync()).resolves.toBeUndefined();
  await file.close();
});
