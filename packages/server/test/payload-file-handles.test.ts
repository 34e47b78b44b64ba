/**
 * How `PayloadFiles` holds its files (`src/store/payload-files.ts`): a session's file is opened
 * for writes that return only once synced (O_DSYNC on Linux: no row may commit before its bytes
 * are on disk, and no separate sync follows them; elsewhere a `datasync` after each group's) and,
 * on Linux, that bypass the page cache (O_DIRECT, `payload-direct-io.ts`),
 * stays open between groups only while more of the session's payloads are on their way, never
 * more than `MAX_FILES_KEPT_OPEN` at once, and is closed before its session's file is removed and
 * at `close()`. After a file's first write in a process, created or found, its directory is synced.
 *
 * The open file descriptors are read from /proc/self (Linux): elsewhere those tests skip, saying so.
 */
import { afterEach, describe, expect, it } from "vitest";
import { constants, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DIRECT_IO_AVAILABLE, MAX_FILES_KEPT_OPEN, PayloadFiles, WRITES_RETURN_SYNCED } from "../src/store/payload-files.js";
import { readPayload } from "./support/payload-read.js";

const HAS_PROC = existsSync("/proc/self/fdinfo");
if (!HAS_PROC) console.log("payload-file-handles: no /proc/self/fdinfo on this platform; the descriptor checks skip");

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function payloadDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-payload-handles-"));
  dirs.push(dir);
  return join(dir, "payloads");
}

/** The open flags of every descriptor of this process that names `path`. */
function descriptorsOf(path: string): number[] {
  const flags: number[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed since the listing
    }
    if (target !== path && target !== `${path} (deleted)`) continue;
    const line = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"));
    flags.push(Number.parseInt(line![1]!, 8));
  }
  return flags;
}

it("writes O_DSYNC by default on Linux, where such a write returns as fdatasync would", () => {
  expect(WRITES_RETURN_SYNCED).toBe(process.platform === "linux");
});

it("writes with direct I/O by default on Linux", () => {
  expect(DIRECT_IO_AVAILABLE).toBe(process.platform === "linux");
  expect(new PayloadFiles(payloadDir()).directIo).toBe(DIRECT_IO_AVAILABLE);
});

describe.skipIf(!HAS_PROC).each([
  { mode: "O_DSYNC direct writes", writesReturnSynced: true, directIo: true, dsync: constants.O_DSYNC, direct: constants.O_DIRECT },
  { mode: "O_DSYNC writes through the page cache", writesReturnSynced: true, directIo: false, dsync: constants.O_DSYNC, direct: 0 },
  { mode: "plain writes and a datasync after each group's", writesReturnSynced: false, directIo: false, dsync: 0, direct: 0 },
])("$mode", ({ writesReturnSynced, directIo, dsync, direct }) => {
  it("holds a session's file open while more of its payloads wait, closes it with its last, and reads back what it wrote", async () => {
    const dir = payloadDir();
    const files = new PayloadFiles(dir, { writesReturnSynced, directIo });
    const first = files.reserve("s1", new Uint8Array(100).fill(1));
    const second = files.reserve("s1", new Uint8Array(50).fill(2));
    await files.writeDurably([first]);
    expect(files.keptOpen).toBe(1);
    const flags = descriptorsOf(join(dir, "s1"));
    expect(flags).toHaveLength(1);
    expect(flags[0]! & constants.O_DSYNC).toBe(dsync);
    expect(flags[0]! & (constants.O_DIRECT ?? 0)).toBe(direct);

    await files.writeDurably([second]);
    expect(files.keptOpen).toBe(0);
    await files.close();
    expect(descriptorsOf(join(dir, "s1"))).toEqual([]);
    expect(await readPayload(files, first.ref)).toEqual(new Uint8Array(100).fill(1));
    expect(await readPayload(files, second.ref)).toEqual(new Uint8Array(50).fill(2));
  });
});

it("keeps at most MAX_FILES_KEPT_OPEN files open, however many sessions are uploading", async () => {
  const files = new PayloadFiles(payloadDir());
  const sessions = Array.from({ length: MAX_FILES_KEPT_OPEN + 6 }, (_, i) => `s${i}`);
  const firsts = sessions.map((sessionId) => files.reserve(sessionId, new Uint8Array([1])));
  const seconds = sessions.map((sessionId) => files.reserve(sessionId, new Uint8Array([2])));
  await files.writeDurably(firsts);
  expect(files.keptOpen).toBe(MAX_FILES_KEPT_OPEN);
  await files.writeDurably(seconds);
  expect(files.keptOpen).toBe(0);
  for (const payload of seconds) expect(await readPayload(files, payload.ref)).toEqual(new Uint8Array([2]));
  await files.close();
});

it.skipIf(!HAS_PROC)("closes a held file before removing it, and every held file at close()", async () => {
  const dir = payloadDir();
  const files = new PayloadFiles(dir);
  const payloads = ["gone", "kept"].map((sessionId) => files.reserve(sessionId, new Uint8Array(10)));
  for (const sessionId of ["gone", "kept"]) files.reserve(sessionId, new Uint8Array(10)); // still on their way
  await files.writeDurably(payloads);
  expect(files.keptOpen).toBe(2);

  await files.remove(["gone"]);
  expect(existsSync(join(dir, "gone"))).toBe(false);
  expect(descriptorsOf(join(dir, "gone"))).toEqual([]);
  expect(files.keptOpen).toBe(1);

  await files.close();
  expect(files.keptOpen).toBe(0);
  expect(descriptorsOf(join(dir, "kept"))).toEqual([]);
});

it.skipIf(!HAS_PROC)(
  "syncs the directory after the first write of a file in this process, whether it created the file or found it",
  async () => {
    const dir = payloadDir();
    const probe = await open(new URL(import.meta.url), "r");
    const proto = Object.getPrototypeOf(probe) as { sync(this: FileHandle): Promise<void> };
    await probe.close();
    const { sync } = proto;
    const directorySyncs: number[] = [];
    proto.sync = function (this: FileHandle) {
      if (statSync(readlinkSync(`/proc/self/fd/${this.fd}`)).isDirectory()) directorySyncs.push(this.fd);
      return sync.call(this);
    };
    try {
      const writer = new PayloadFiles(dir);
      await writer.writeDurably([writer.reserve("s1", new Uint8Array([1]))]);
      expect(directorySyncs).toHaveLength(1); // a new file
      await writer.writeDurably([writer.reserve("s1", new Uint8Array([2]))]);
      expect(directorySyncs).toHaveLength(1); // its entry is durable already
      await writer.close();
      // The next process finds the file (an earlier one may have been killed before its directory sync).
      const next = new PayloadFiles(dir);
      await next.writeDurably([next.reserve("s1", new Uint8Array([3]))]);
      expect(directorySyncs).toHaveLength(2);
      await next.writeDurably([next.reserve("s1", new Uint8Array([4]))]);
      expect(directorySyncs).toHaveLength(2);
      await next.close();
    } finally {
      proto.sync = sync;
    }
  },
);

it("fails a group's write only once every file's write of it has settled", async () => {
  let releaseSlow: () => void = () => {};
  const slowOpened = new Promise<void>((resolve) => (releaseSlow = resolve));
  let slowDone = false;
  const files = new PayloadFiles(payloadDir(), {
    openFile: async (path, flags, mode) => {
      if (path.endsWith("broken")) throw Object.assign(new Error("EACCES"), { code: "EACCES" });
      if (path.endsWith("slow")) {
        await slowOpened;
        const handle = await open(path, flags, mode);
        slowDone = true;
        return handle;
      }
      return open(path, flags, mode);
    },
  });
  const group = files.writeDurably([files.reserve("slow", new Uint8Array([1])), files.reserve("broken", new Uint8Array([2]))]);
  let settled = false;
  void group.catch(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  expect(settled).toBe(false); // the slow file's write is still running
  releaseSlow();
  await expect(group).rejects.toThrow("EACCES");
  expect(slowDone).toBe(true);
  await files.close();
});
