/**
 * What `FileHandle#datasync` (the store's syncs, store/sqlite-database.ts) was called on while
 * `run` runs: the descriptor of each call in order, and the most calls running at once. Node's
 * `FileHandle` class is not exported; its prototype is reached through a handle opened and
 * closed here, and restored afterwards.
 */
import { open, type FileHandle } from "node:fs/promises";

export async function datasyncsDuring(run: () => Promise<void>): Promise<{ synced: number[]; concurrent: number }> {
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
