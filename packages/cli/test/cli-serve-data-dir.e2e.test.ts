/**
 * `serve`'s data directory holds sessions.db (small values and inputs): made for this user only,
 * a directory the user made is warned about but never changed, and a data directory or database
 * that cannot be used is reported with its path and the reason.
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServe, TOKEN, waitFor } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

const serveArgs = (dataDir: string) => ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn"];
const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8);

it("creates the data directory 0700 and sessions.db 0600, with no warning", async () => {
  const dataDir = join(scratchDir(), "new", "data");
  // The token by environment: --token on the command line has a warning of its own.
  const s = await startServe(
    serveArgs(dataDir).filter((arg) => arg !== "--token" && arg !== TOKEN),
    dataDir,
    { env: { GOLEM_STREAM_TOKEN: TOKEN } },
  );
  servers.push(s);
  expect(modeOf(dataDir)).toBe("700");
  expect(modeOf(join(dataDir, ".."))).toBe("700");
  expect(modeOf(join(dataDir, "sessions.db"))).toBe("600");
  expect(s.running.stdout().toString("utf8")).not.toMatch(/WARNING/);
});

it("warns about a data directory others can read, in the banner and the log, and leaves its mode alone", async () => {
  const dataDir = join(scratchDir(), "shared");
  mkdirSync(dataDir);
  chmodSync(dataDir, 0o755);
  const s = await startServe(serveArgs(dataDir), dataDir);
  servers.push(s);
  expect(s.running.stdout().toString("utf8")).toContain(
    `WARNING: the data directory ${dataDir} is readable by others (mode 0755); serve does not change a directory it did not create: \`chmod 700 ${dataDir}\``,
  );
  await waitFor(s.running, () => /data directory readable by others/.test(s.running.stderr()), "the warning in the log");
  expect(modeOf(dataDir)).toBe("755");
  expect(modeOf(join(dataDir, "sessions.db"))).toBe("600");
});

it("says why the data directory cannot be created, and names a database that cannot be opened", async () => {
  const file = join(scratchDir(), "a-file");
  writeFileSync(file, "");
  const onFile = await run(["serve", ...serveArgs(file)]);
  expect(onFile.code).toBe(EXIT.usage);
  expect(onFile.stderr).toBe(
    `golem-stream: cannot create the data directory ${file}: EEXIST: file already exists (a file is in the way)\n`,
  );

  // mkdir answers ENOENT under /proc, which exists: Node's recursive mkdir had looped forever on it.
  const underProc = await run(["serve", ...serveArgs("/proc/golem-stream-nope/data")]);
  expect(underProc.code).toBe(EXIT.usage);
  expect(underProc.stderr).toBe(
    "golem-stream: cannot create the data directory /proc/golem-stream-nope/data: ENOENT: no such file or directory (the file system there makes no new directory)\n",
  );

  const dataDir = scratchDir();
  mkdirSync(join(dataDir, "sessions.db"));
  const onDirectory = await run(["serve", ...serveArgs(dataDir)]);
  expect(onDirectory.code).toBe(EXIT.usage);
  expect(onDirectory.stderr).toContain(
    `cannot open the session database ${join(dataDir, "sessions.db")}: EISDIR: illegal operation on a directory`,
  );
});
