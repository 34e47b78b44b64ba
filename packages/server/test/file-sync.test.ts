/**
 * `FileSync` (store/sqlite-database.ts): each sync of a store file runs on a handle no other sync
 * is using at that moment. Linux reports a failed writeback to the next sync of each open file
 * once; two syncs at once on one handle could split that report, one failing while the other
 * succeeds over the lost pages. Handles are reused from one sync to the next and closed with it.
 */
import { fstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { FileSync } from "../src/store/sqlite-database.js";

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

/** FileHandle's datasync recorded by file descriptor while `run` runs, and the most that ran at once. */
async function handlesDuring(run: () => Promise<void>): Promise<{ synced: number[]; concurrent: number }> {
  const probe = await open(new URL(import.meta.url), "r");
  const proto = Object.getPrototypeOf(probe) as { datasync(this: FileHandle): Promise<void> };
  await probe.close();
  const { datasync } = proto;
  const synced: number[] = [];
  let running = 0;
  let concurrent = 0;
  proto.datasync = async function (this: FileHandle) {
    synced.push(this.fd);
    running++;
    concurrent = Math.max(concurrent, running);
    try {
      await datasync.call(this);
    } finally {
      running--;
    }
  };
  try {
    await run();
  } finally {
    proto.datasync = datasync;
  }
  return { synced, concurrent };
}

it("runs syncs at once on handles of their own, reuses them one after another, and closes them all", async () => {
  const file = new FileSync(scratchFile());
  const { synced, concurrent } = await handlesDuring(async () => {
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
