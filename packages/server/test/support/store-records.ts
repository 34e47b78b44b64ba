/**
 * Records and directories for the `SessionStore` tests: a session and a
 * stream with plausible values (shared with other stores in
 * `src/testing/`), and temporary data directories removed after each test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteSessionStore, type SqliteSessionStoreOptions } from "../../src/index.js";
import type { SessionStore } from "../../src/store/session-store.js";
import { session, startAttempt, stream } from "../../src/testing/store-records.js";

const dirs: string[] = [];
export function sqliteDir(): string {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-store-"));
  dirs.push(dataDir);
  return dataDir;
}

/**
 * `open` and `reopen` for `checkAgainstModel` on SQLite stores made with
 * `options`: each run opens a fresh directory, and `reopen` closes the
 * store and opens that directory again.
 */
export function sqliteModelStores(options: Omit<SqliteSessionStoreOptions, "dataDir">) {
  let dataDir = "";
  const openDir = () => new SqliteSessionStore({ ...options, dataDir });
  return {
    open: async (): Promise<SessionStore> => {
      dataDir = sqliteDir();
      return openDir();
    },
    reopen: async (store: SessionStore): Promise<SessionStore> => {
      await store.close();
      return openDir();
    },
  };
}

/** For `afterEach`: removes the directories `sqliteDir` made. */
export function removeStoreDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export { bytes, session, startAttempt, stream } from "../../src/testing/store-records.js";

/** A SQLite store, made with `options` on a fresh directory, holding one started session with an input stream: where most of the store's tests start. */
export async function storeWithInput(options: Omit<SqliteSessionStoreOptions, "dataDir"> = {}) {
  const dataDir = sqliteDir();
  const store = new SqliteSessionStore({ dataDir, ...options });
  const s = session();
  const input = stream(s.sessionId, "input");
  await store.createSession(s, [input], startAttempt(s));
  return { dataDir, store, s, input };
}
