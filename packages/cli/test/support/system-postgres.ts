/**
 * A throwaway PostgreSQL from the system's own binaries, where Debian's
 * `postgresql` package puts them (/usr/lib/postgresql/<version>/bin), for
 * what the embedded server of `@golem-stream/store-postgres/local` cannot
 * show: it is built without lz4, Debian's with it. Same shape as the
 * embedded one: a fresh data directory in `parentDir`, loopback TCP on a free
 * port, no Unix socket, no fsync, password authentication for `postgres`
 * with a random password; as root, run as the system user `postgres` (which
 * the package creates).
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { freePort } from "./free-port.js";

const DEBIAN_ROOT = "/usr/lib/postgresql";
const HOST = "127.0.0.1";
const USER = "postgres";
/** How long the server may take to accept connections after it was started. */
const READY_TIMEOUT_MS = 30_000;

export interface SystemPostgres {
  /** The URL of `database` on this server (password included: keep it out of logs). */
  urlOf(database: string): string;
  createDatabase(name: string): Promise<string>;
  /** Stops the server and deletes its files. */
  stop(): Promise<void>;
}

/** The bin directory of the newest system PostgreSQL installed, or undefined. */
export function systemPostgresBinDir(): string | undefined {
  if (!existsSync(DEBIAN_ROOT)) return undefined;
  const versions = readdirSync(DEBIAN_ROOT)
    .filter(
      (name) =>
        /^\d+$/.test(name) &&
        existsSync(join(DEBIAN_ROOT, name, "bin", "postgres")) &&
        existsSync(join(DEBIAN_ROOT, name, "bin", "initdb")),
    )
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(DEBIAN_ROOT, versions[0], "bin");
}

/** The uid and gid to run as: `postgres`'s when this is root (PostgreSQL refuses root), else none. */
function runAs(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, USER], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

export async function startSystemPostgres(binDir: string, parentDir: string): Promise<SystemPostgres> {
  const user = runAs();
  const directory = mkdtempSync(join(parentDir, "golem-stream-pg-"));
  chmodSync(directory, 0o755);
  if (user !== undefined) chownSync(directory, user.uid, user.gid);
  const password = randomBytes(12).toString("hex");
  const output: string[] = [];
  const data = join(directory, "data");
  let server: ReturnType<typeof spawn> | undefined;
  const stop = async (): Promise<void> => {
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server?.once("exit", resolve));
      // Immediate shutdown: a throwaway server has nothing to flush.
      server.kill("SIGQUIT");
      await exited;
    }
    rmSync(directory, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  };
  try {
    const passwordFile = join(directory, "password");
    writeFileSync(passwordFile, password, { mode: 0o600 });
    if (user !== undefined) chownSync(passwordFile, user.uid, user.gid);
    execFileSync(
      join(binDir, "initdb"),
      ["-D", data, "-U", USER, "--auth=scram-sha-256", `--pwfile=${passwordFile}`, "-E", "UTF8", "--no-sync"],
      {
        stdio: "pipe",
        ...user,
      },
    );
    const port = await freePort();
    const settings = { listen_addresses: HOST, port: String(port), unix_socket_directories: "", fsync: "off", max_connections: "100" };
    server = spawn(
      join(binDir, "postgres"),
      ["-D", data, ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`])],
      {
        stdio: ["ignore", "pipe", "pipe"],
        ...user,
      },
    );
    server.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    server.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    const urlOf = (database: string) => `postgres://${USER}:${password}@${HOST}:${port}/${database}`;
    const query = async (text: string): Promise<void> => {
      const client = new pg.Client({ connectionString: urlOf("postgres") });
      await client.connect();
      try {
        await client.query(text);
      } finally {
        await client.end();
      }
    };
    for (let waited = 0; ; waited += 100) {
      if (server.exitCode !== null) throw new Error(`postgres exited with code ${server.exitCode}`);
      try {
        await query("SELECT 1");
        break;
      } catch (error) {
        if (waited >= READY_TIMEOUT_MS) throw error;
        await sleep(100);
      }
    }
    return {
      urlOf,
      createDatabase: async (name) => {
        if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new TypeError(`database name ${JSON.stringify(name)}`);
        await query(`CREATE DATABASE ${name}`);
        return urlOf(name);
      },
      stop,
    };
  } catch (error) {
    await stop();
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(
      `the system PostgreSQL in ${binDir} could not start: ${error instanceof Error ? error.message : String(error)}\n${stderr}${output.join("").slice(-4000)}`,
      {
        cause: error,
      },
    );
  }
}
