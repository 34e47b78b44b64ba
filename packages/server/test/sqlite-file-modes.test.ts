/**
 * The SQLite store's files hold small values and inputs: readable by this user only (0600), like
 * the payload files beside them, whatever the umask; and a database that cannot be opened is
 * named in the error (SQLite's own message, "unable to open database file", does not).
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { SqliteSessionStore } from "../src/index.js";
import { session } from "../src/testing/index.js";
import { removeStoreDirs, sqliteDir, startAttempt } from "./support/store-records.js";

const umaskAtStart = process.umask();
afterEach(() => {
  process.umask(umaskAtStart);
  removeStoreDirs();
});

const modeOf = (path: string): number => statSync(path).mode & 0o777;

it("creates sessions.db and its WAL 0600 under a umask that would leave them readable to others", async () => {
  process.umask(0o022);
  const dataDir = sqliteDir();
  const store = new SqliteSessionStore({ dataDir });
  try {
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    const files = ["sessions.db", "sessions.db-wal", "sessions.db-shm"]
      .map((name) => join(dataDir, name))
      .filter((path) => existsSync(path));
    expect(files).toContain(join(dataDir, "sessions.db-wal"));
    for (const path of files) expect(modeOf(path).toString(8), path).toBe("600");
  } finally {
    await store.close();
  }
});

it("names the database file when it cannot be opened (a directory in its place)", () => {
  const dataDir = sqliteDir();
  mkdirSync(join(dataDir, "sessions.db"));
  expect(() => new SqliteSessionStore({ dataDir })).toThrow(
    `cannot open the session database ${join(dataDir, "sessions.db")}: EISDIR: illegal operation on a directory`,
  );
});
