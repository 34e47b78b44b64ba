/**
 * `serve --log-compression lz4|server`: store-postgres's `logCompression` on
 * the command line, observed where it acts: how PostgreSQL stored the input
 * rows too large for a page (`pg_column_compression`) after a real `invoke`
 * through a real `serve` node. Misuse is a usage error before anything starts.
 *
 * What each value stores depends on the server: `lz4` is lz4 where the server
 * lists it for `default_toast_compression` (PostgreSQL 14+ built with lz4, as
 * Debian's and PGDG's are), else the server's own method; `server` is always
 * the server's own (pglz unless configured). The embedded PostgreSQL these
 * tests start has no lz4, so there both store pglz; set
 * `GOLEM_STREAM_PG_URL` (a role that may create databases) to run against a
 * server with lz4, where the two differ. PostgreSQL that cannot start fails
 * the tests that need it with the reason: nothing here skips.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { startLocalPostgres, type LocalPostgres } from "@golem-stream/store-postgres/local";
import { EXIT } from "../src/exit-codes.js";
import { postgresParentDir, run, scratchDir, startServe, TOKEN, type ServerProcess } from "./support/processes.js";

const givenUrl = process.env["GOLEM_STREAM_PG_URL"];
let postgres: LocalPostgres | undefined;
let startFailure: unknown;
const created: string[] = [];

beforeAll(async () => {
  if (givenUrl !== undefined && givenUrl !== "") return;
  try {
    postgres = await startLocalPostgres({ database: "cli_log_compression", parentDir: postgresParentDir() });
  } catch (error) {
    startFailure = error;
  }
}, 60_000);

const nodes: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => (node.running.child.exitCode === null ? node.kill() : undefined)));
});

afterAll(async () => {
  if (postgres !== undefined) return postgres.stop();
  for (const database of created.splice(0)) await query(adminUrl(), `DROP DATABASE IF EXISTS ${database}`);
});

/** The URL of the server's maintenance database (where databases are created and dropped). */
function adminUrl(): string {
  if (postgres !== undefined) return postgres.urlOf("postgres");
  if (givenUrl !== undefined && givenUrl !== "") return givenUrl;
  throw new Error(`PostgreSQL could not start: ${startFailure instanceof Error ? startFailure.message : String(startFailure)}`);
}

async function query<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

/** A fresh database on the test's PostgreSQL; fails (never skips) when there is none. */
async function freshDatabase(): Promise<string> {
  const name = `cli_lc_${randomBytes(4).toString("hex")}`;
  if (postgres !== undefined) return postgres.createDatabase(name);
  const url = new URL(adminUrl());
  await query(url.toString(), `CREATE DATABASE ${name}`);
  created.push(name);
  url.pathname = `/${name}`;
  return url.toString();
}

const serveArgs = (store: string, extra: readonly string[]) => [
  "--port", "0", "--token", TOKEN, "--store", store, "--keyring", join(scratchDir(), "keyring.json"), "--log-level", "warn", ...extra,
];

/** How PostgreSQL stored the input rows larger than a page that `digest` of a few compressible MiB left, by method. */
async function storedInputAs(extra: readonly string[]): Promise<string[]> {
  const store = await freshDatabase();
  const node = await startServe(serveArgs(store, extra));
  nodes.push(node);
  const digested = await run(["invoke", "echo", "digest", "-c", '{"name":"lc"}', "-"], { env: node.env, stdin: Buffer.alloc(3 * 1024 * 1024, "golem stream ") });
  expect(digested.stderr).toBe("");
  expect(digested.code).toBe(EXIT.success);
  const rows = await query<{ method: string | null }>(
    store,
    "SELECT DISTINCT pg_column_compression(data) AS method FROM golem_stream.input_chunks WHERE octet_length(data) > 8160",
  );
  return rows.map((row) => row.method ?? "not compressed");
}

it("refuses --log-compression without a PostgreSQL store, or with a method it does not know, with exit 2; --help lists it", async () => {
  const dataDir = scratchDir();
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--log-compression", "server"], {}, /^golem-stream: --log-compression only applies to a cluster node: add --store postgres:\/\/USER@HOST:PORT\/DATABASE$/m],
    [["--log-compression", "lz4", "--pg-query-timeout-ms", "100"], {}, /--pg-query-timeout-ms, --log-compression only apply to a cluster node/],
    [["--store", "postgres://u@127.0.0.1:1/db", "--log-compression", "zstd"], {}, /option '--log-compression <method>' argument 'zstd' is invalid\. Allowed choices are lz4, server\./],
    [["--log-compression", "pglz"], { GOLEM_STREAM_STORE: "postgres://u@127.0.0.1:1/db" }, /argument 'pglz' is invalid\. Allowed choices are lz4, server\./],
    [["--store", "postgres://u@127.0.0.1:1/db", "--log-compression"], {}, /option '--log-compression <method>' argument missing/],
  ];
  const results = await Promise.all(
    cases.map(([args, env]) => run(["serve", "--port", "0", "--token", TOKEN, "--data-dir", dataDir, ...args], { env })),
  );
  results.forEach((result, index) => {
    const [, , message] = cases[index]!;
    expect(result.stderr, message.source).toMatch(message);
    expect(result.code, message.source).toBe(EXIT.usage);
    expect(result.stdout.toString()).toBe("");
  });
  const help = await run(["serve", "--help"]);
  expect(help.code).toBe(EXIT.success);
  // Commander wraps the help to the terminal's width.
  const helpText = help.stdout.toString().replace(/\s+/g, " ");
  expect(helpText).toMatch(/--log-compression <method> with --store: how PostgreSQL compresses .*\(default: lz4\) \(choices: "lz4", "server"\)/);
}, 30_000);

it("stores the rows too large for a page with the method --log-compression names: lz4 where the server has it, else the server's own", async () => {
  const [{ lz4 }] = (await query<{ lz4: boolean }>(
    adminUrl(),
    "SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)) AS lz4",
  )) as [{ lz4: boolean }];
  const [{ method: serverDefault }] = (await query<{ method: string }>(adminUrl(), "SELECT current_setting('default_toast_compression') AS method")) as [{ method: string }];
  const [asLz4, asServer, asDefault] = await Promise.all([
    storedInputAs(["--log-compression", "lz4"]),
    storedInputAs(["--log-compression", "server"]),
    storedInputAs([]),
  ]);
  expect(asLz4).toEqual([lz4 ? "lz4" : serverDefault]);
  expect(asServer).toEqual([serverDefault]);
  // The store's default is lz4.
  expect(asDefault).toEqual(asLz4);
}, 60_000);
