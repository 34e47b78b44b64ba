/**
 * Payload files written with direct I/O (`src/store/payload-direct-io.ts`): a run's bytes land at
 * their places a staging window at a time, the padding between payloads zeroed whatever the
 * staging buffer held before; the staging buffers are bounded and reused; and a file system that
 * refuses direct I/O (at the open or at a write) has the same bytes written at the same places
 * through the page cache, from then on.
 */
import { afterEach, expect, it, vi } from "vitest";
import fc from "fast-check";
import { constants, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  alignUp,
  DIRECT_IO_ALIGNMENT,
  MAX_STAGING_BUFFERS,
  STAGING_BYTES,
  StagingBuffers,
  writeRunDirect,
} from "../src/store/payload-direct-io.js";
import { adjacentRuns, DIRECT_IO_AVAILABLE, PayloadFiles, type PendingPayload } from "../src/store/payload-files.js";
import { readPayload } from "./support/payload-read.js";

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-direct-io-"));
  dirs.push(dir);
  return dir;
}

/** Payloads of the given lengths laid out as a direct writer lays them: each at the aligned end of the one before. */
function laidOut(lengths: readonly number[], start = 0): PendingPayload[] {
  let offset = start;
  return lengths.map((length, index) => {
    const data = new Uint8Array(length).fill((index % 250) + 1);
    const payload = { ref: { sessionId: "s", offset, length }, data };
    offset = alignUp(offset + length);
    return payload;
  });
}

/** What the file must hold from `start`: each payload's bytes at its place, zeros everywhere else up to the aligned end. */
function expectedFile(payloads: readonly PendingPayload[], start: number): Uint8Array {
  const last = payloads[payloads.length - 1]!;
  const bytes = new Uint8Array(alignUp(last.ref.offset + last.ref.length) - start);
  for (const { ref, data } of payloads) bytes.set(data, ref.offset - start);
  return bytes;
}

/**
 * Makes the next `FileHandle.write` fail as a device that refuses a direct write answers, and returns
 * the spy (`writev`, which page-cache writes use, is left alone). `dir` holds a scratch file opened
 * to reach the class's prototype, which `node:fs/promises` does not export.
 */
async function refuseNextFileWrite(dir: string) {
  const probe = await open(join(dir, "probe"), "w");
  const prototype = Object.getPrototypeOf(probe) as { write: (...args: unknown[]) => Promise<unknown> };
  await probe.close();
  return vi
    .spyOn(prototype, "write")
    .mockRejectedValueOnce(Object.assign(new Error("EINVAL: invalid argument, write"), { code: "EINVAL" }));
}

it("writes a run's payloads at their places and zeros between them, a staging window at a time, whatever the staging held", async () => {
  const dir = tempDir();
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 1, max: 3 * DIRECT_IO_ALIGNMENT + 5 }), { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 0, max: 3 }),
      async (lengths, stagingBlocks, startBlocks) => {
        // A plain file takes unaligned memory: the layout is what this checks, not the device.
        const path = join(dir, "run");
        const file = await open(path, "w+");
        try {
          const start = startBlocks * DIRECT_IO_ALIGNMENT;
          const payloads = laidOut(lengths, start);
          const staging = new Uint8Array(stagingBlocks * DIRECT_IO_ALIGNMENT).fill(0xaa); // stale bytes
          const end = await writeRunDirect(file, payloads, staging);
          const last = payloads[payloads.length - 1]!;
          expect(end).toBe(alignUp(last.ref.offset + last.ref.length));
          expect(end % DIRECT_IO_ALIGNMENT).toBe(0);
          const written = readFileSync(path);
          expect(written.byteLength).toBe(end);
          // `equals`, not `toEqual`: a deep comparison of tens of kilobytes element by element is slow.
          expect(written.subarray(start).equals(expectedFile(payloads, start))).toBe(true);
        } finally {
          await file.close();
          rmSync(path);
        }
      },
    ),
    { numRuns: 60 },
  );
});

it("lays payloads out at aligned offsets, runs split where one does not start at the aligned end of the one before", () => {
  const payloads = laidOut([10, DIRECT_IO_ALIGNMENT, 1]);
  expect(payloads.map((p) => p.ref.offset)).toEqual([0, DIRECT_IO_ALIGNMENT, 2 * DIRECT_IO_ALIGNMENT]);
  expect(adjacentRuns(payloads, DIRECT_IO_ALIGNMENT)).toEqual([payloads]);
  // Byte-adjacent only (a write through the page cache): the padding after the first splits.
  expect(adjacentRuns(payloads).map((run) => run.length)).toEqual([1, 2]);
  const apart = [...payloads, ...laidOut([5], 5 * DIRECT_IO_ALIGNMENT)];
  expect(adjacentRuns(apart, DIRECT_IO_ALIGNMENT).map((run) => run.length)).toEqual([3, 1]);
});

it("keeps at most MAX_STAGING_BUFFERS staging buffers, cut from one block and reused; a take beyond them waits for a give", async () => {
  const pool = new StagingBuffers();
  const taken = await Promise.all(Array.from({ length: MAX_STAGING_BUFFERS }, () => pool.take()));
  // Slices of one page-aligned block, each a whole number of windows into it.
  expect(new Set(taken.map((buffer) => buffer?.buffer)).size).toBe(1);
  expect(taken.map((buffer) => buffer?.byteOffset)).toEqual(Array.from({ length: MAX_STAGING_BUFFERS }, (_, i) => i * STAGING_BYTES));
  for (const buffer of taken) expect(buffer?.byteLength).toBe(STAGING_BYTES);
  let extra: Uint8Array | undefined;
  const waiting = pool.take().then((buffer) => (extra = buffer));
  await new Promise((resolve) => setImmediate(resolve));
  expect(extra).toBeUndefined();
  pool.give(taken[0]!);
  await waiting;
  expect(extra).toBe(taken[0]);
});

it.skipIf(!DIRECT_IO_AVAILABLE)(
  "reads back payloads larger than a staging window, of more sessions and stores at once than staging buffers, written with O_DIRECT",
  async () => {
    // Two stores' writers, sharing the process's staging buffers.
    const writers = [0, 1].map((n) => new PayloadFiles(join(tempDir(), `payloads-${n}`), { directIo: true }));
    const sessions = Array.from({ length: MAX_STAGING_BUFFERS + 3 }, (_, i) => `s${i}`);
    const sizes = [STAGING_BYTES + 3, 70_000, 1, 2 * STAGING_BYTES];
    const written = writers.map((files, w) =>
      sessions.flatMap((sessionId, s) =>
        sizes.map((size, i) => files.reserve(sessionId, new Uint8Array(size).fill(((w * 31 + s * 7 + i) % 255) + 1))),
      ),
    );
    await Promise.all(writers.map((files, w) => files.writeDurably(written[w]!)));
    for (const [w, files] of writers.entries()) {
      expect(files.directIo).toBe(true);
      for (const payload of written[w]!) {
        expect(payload.ref.offset % DIRECT_IO_ALIGNMENT).toBe(0);
        expect(Buffer.from(await readPayload(files, payload.ref)).equals(Buffer.from(payload.data))).toBe(true);
      }
      await files.close();
    }
  },
);

it.skipIf(!DIRECT_IO_AVAILABLE)("writes through the page cache, at the same places, once a direct write is refused", async () => {
  const dir = join(tempDir(), "payloads");
  const files = new PayloadFiles(dir, { directIo: true });
  const write = await refuseNextFileWrite(dir);
  const first = files.reserve("s", new Uint8Array(5000).fill(1));
  const second = files.reserve("s", new Uint8Array(3).fill(2));
  await files.writeDurably([first, second]);
  expect(write).toHaveBeenCalledTimes(1); // the refused one; the rest went through `writev`
  expect(files.directIo).toBe(false);
  expect(second.ref.offset).toBe(alignUp(first.ref.length)); // the layout stays
  expect(await readPayload(files, first.ref)).toEqual(first.data);
  expect(await readPayload(files, second.ref)).toEqual(second.data);
  const later = files.reserve("t", new Uint8Array(10).fill(3));
  await files.writeDurably([later]);
  expect(write).toHaveBeenCalledTimes(1);
  expect(await readPayload(files, later.ref)).toEqual(later.data);
  await files.close();
});

it.skipIf(!DIRECT_IO_AVAILABLE)("reopens without O_DIRECT a file held open from before direct I/O was refused", async () => {
  const dir = join(tempDir(), "payloads");
  const files = new PayloadFiles(dir, { directIo: true });
  const firsts = ["s", "t"].map((sessionId) => files.reserve(sessionId, new Uint8Array(100).fill(1)));
  const seconds = ["s", "t"].map((sessionId) => files.reserve(sessionId, new Uint8Array(100).fill(2)));
  await files.writeDurably(firsts); // both files held open: their second payloads are on their way
  expect(files.keptOpen).toBe(2);
  const write = await refuseNextFileWrite(dir);
  await files.writeDurably([seconds[0]!]); // refused for s
  expect(files.directIo).toBe(false);
  await files.writeDurably([seconds[1]!]); // t's held file: not written directly again
  expect(write).toHaveBeenCalledTimes(1);
  for (const payload of [...firsts, ...seconds]) expect(await readPayload(files, payload.ref)).toEqual(payload.data);
  await files.close();
});

it.skipIf(!DIRECT_IO_AVAILABLE)("opens without O_DIRECT once a file system refuses it at the open", async () => {
  const dir = join(tempDir(), "payloads");
  // As a file system without direct I/O answers an open that asks for it.
  const openFile = (path: string, flags: number, mode: number) =>
    (flags & constants.O_DIRECT) !== 0
      ? Promise.reject(Object.assign(new Error("EINVAL: invalid argument, open"), { code: "EINVAL" }))
      : open(path, flags, mode);
  const files = new PayloadFiles(dir, { directIo: true, openFile });
  const payload = files.reserve("s", new Uint8Array(100).fill(9));
  await files.writeDurably([payload]);
  expect(files.directIo).toBe(false);
  expect(await readPayload(files, payload.ref)).toEqual(payload.data);
  expect(statSync(join(dir, "s")).size).toBe(100); // through the page cache: no padding written
  await files.close();
});

it("writes nothing with O_DIRECT when told not to: payloads then lie end to end", async () => {
  const files = new PayloadFiles(join(tempDir(), "payloads"), { directIo: false });
  const a = files.reserve("s", new Uint8Array(10));
  const b = files.reserve("s", new Uint8Array(10));
  expect(b.ref.offset).toBe(a.ref.length);
  await files.writeDurably([a, b]);
  expect(files.directIo).toBe(false);
  await files.close();
});
