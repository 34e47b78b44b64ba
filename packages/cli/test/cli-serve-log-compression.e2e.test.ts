/**
 * `serve --log-compression lz4|server`: store-postgres's `logCompression` on
 * the command line, observed where it acts: how PostgreSQL stored the input
 * rows too large for a page (`pg_column_compression`) after a real `invoke`
 * through a real `serve` node. Misuse is a usage error before anything starts.
 *
 * `lz4` is lz4 where the server lists it for `default_toast_compression`
 * (PostgreSQL 14+ built with lz4, as Debian's and PGDG's are), else the
 * server's own method; `server` is always the server's own, which each test
 * database sets to pglz. The embedded PostgreSQL has no lz4, so there both
 * store pglz (serve still starts with `lz4`); the two differ on a server with
 * lz4: `GOLEM_STREAM_PG_URL` (a role that may create databases) or else the
 * system's PostgreSQL (Debian's `postgresql` package, which `pnpm test`
 * installs when missing: scripts/ensure-test-packages.sh), started here. A
 * server that is missing or cannot start fails the tests that need it with
 * the reason.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { startLocalPostgres } from "@golem-stream/store-postgres/local";
import { EXIT } from "../src/exit-codes.js";
import { postgresParentDir, run, scratchDir, startServe, TOKEN, type ServerProcess } from "./support/processes.js";
import { startSystemPostgres, systemPostgresBinDir } from "./support/system-postgres.js";

/** A server the tests create databases on. */
interface Postgres {
  /** The URL of its maintenance database (where databases are created and dropped). */
  readonly adminUrl: string;
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

const givenUrl = process.env["GOLEM_STREAM_PG_URL"] || undefined;
const systemBinDir = givenUrl === undefined ? systemPostgresBinDir() : undefined;
/** Where a server with lz4 comes from, if anywhere. */
const lz4Source =
  givenUrl !== undefined ? "GOLEM_STREAM_PG_URL" : systemBinDir !== undefined ? `the system's PostgreSQL (${systemBinDir})` : undefined;

/** A started server, or why it did not start (a test that needs it fails with that). */
type Started = { readonly postgres: Postgres } | { readonly failure: unknown };
let embedded: Started | undefined;
let withLz4: Started | undefined;

async function attempt(start: () => Promise<Postgres>): Promise<Started> {
  try {
    return { postgres: await start() };
  } catch (failure) {
    return { failure };
  }
}

/** An existing server: databases made here are dropped at the end. */
function givenServer(url: string): Postgres {
  const made: string[] = [];
  return {
    adminUrl: url,
    createDatabase: async (name) => {
      await query(url, `CREATE DATABASE ${name}`);
      made.push(name);
      const database = new URL(url);
      database.pathname = `/${name}`;
      return database.toString();
    },
    stop: async () => {
      for (const name of made.splice(0)) await query(url, `DROP DATABASE IF EXISTS ${name}`);
    },
  };
}

beforeAll(async () => {
  embedded = await attempt(async () => {
    const local = await startLocalPostgres({ database: "cli_log_compression", parentDir: postgresParentDir() });
    return { adminUrl: local.urlOf("postgres"), createDatabase: (name) => local.createDatabase(name), stop: () => local.stop() };
  });
  if (givenUrl !== undefined) withLz4 = { postgres: givenServer(givenUrl) };
  else if (systemBinDir !== undefined) {
    withLz4 = await attempt(async () => {
      const system = await startSystemPostgres(systemBinDir, postgresParentDir());
      return { adminUrl: system.urlOf("postgres"), createDatabase: (name) => system.createDatabase(name), stop: () => system.stop() };
    });
  }
}, 90_000);

const nodes: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(
    nodes
      .splice(0)
      .filter((node) => node.running.child.exitCode === null)
      .map((node) => node.kill()),
  );
});

afterAll(async () => {
  for (const started of [embedded, withLz4]) if (started !== undefined && "postgres" in started) await started.postgres.stop();
}, 30_000);

function serverOf(started: Started | undefined, what: string): Postgres {
  if (started !== undefined && "postgres" in started) return started.postgres;
  const failure = started === undefined ? "not started" : started.failure;
  throw new Error(`${what} could not start: ${failure instanceof Error ? failure.message : String(failure)}`);
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

/** Whether the server can compress with lz4, as the store asks it. */
async function hasLz4(postgres: Postgres): Promise<boolean> {
  const [row] = await query<{ lz4: boolean }>(
    postgres.adminUrl,
    "SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)) AS lz4",
  );
  return row?.lz4 === true;
}

const serveArgs = (store: string, extra: readonly string[]) => [
  "--port",
  "0",
  "--token",
  TOKEN,
  "--store",
  store,
  "--keyring",
  join(scratchDir(), "keyring.json"),
  "--log-level",
  "warn",
  ...extra,
];

/**
 * How PostgreSQL stored the input rows larger than a page that `digest` of a few compressible MiB
 * left, by method, in a fresh database whose own method is pglz (what `server` keeps).
 */
async function storedInputAs(postgres: Postgres, extra: readonly string[]): Promise<string[]> {
  const name = `cli_lc_${randomBytes(4).toString("hex")}`;
  const store = await postgres.createDatabase(name);
  await query(postgres.adminUrl, `ALTER DATABASE ${name} SET default_toast_compression = pglz`);
  const node = await startServe(serveArgs(store, extra));
  nodes.push(node);
  const digested = await run(["invoke", "echo", "digest", "-c", '{"name":"lc"}', "-"], {
    env: node.env,
    stdin: Buffer.alloc(3 * 1024 * 1024, "golem stream "),
  });
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
    [
      ["--log-compression", "server"],
      {},
      /^golem-stream: --log-compression only applies to a cluster node: add --store postgres:\/\/USER@HOST:PORT\/DATABASE$/m,
    ],
    [
      ["--log-compression", "lz4", "--pg-query-timeout-ms", "100"],
      {},
      /--pg-query-timeout-ms, --log-compression only apply to a cluster node/,
    ],
    [
      ["--store", "postgres://u@127.0.0.1:1/db", "--log-compression", "zstd"],
      {},
      /option '--log-compression <method>' argument 'zstd' is invalid\. Allowed choices are lz4, server\./,
    ],
    [
      ["--log-compression", "pglz"],
      { GOLEM_STREAM_STORE: "postgres://u@127.0.0.1:1/db" },
      /argument 'pglz' is invalid\. Allowed choices are lz4, server\./,
    ],
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
  expect(helpText).toMatch(
    /--log-compression <method> with --store: how PostgreSQL compresses .*\(default: lz4\) \(choices: "lz4", "server"\)/,
  );
}, 30_000);

it("on the embedded PostgreSQL (no lz4) serve starts with either method and the rows go through the server's own (pglz)", async () => {
  const postgres = serverOf(embedded, "the embedded PostgreSQL");
  const lz4 = await hasLz4(postgres);
  const [asLz4, asServer, asDefault] = await Promise.all([
    storedInputAs(postgres, ["--log-compression", "lz4"]),
    storedInputAs(postgres, ["--log-compression", "server"]),
    storedInputAs(postgres, []),
  ]);
  expect(asLz4).toEqual([lz4 ? "lz4" : "pglz"]);
  expect(asServer).toEqual(["pglz"]);
  expect(asDefault).toEqual(asLz4);
}, 60_000);

it(`on a PostgreSQL with lz4 (${lz4Source ?? "none here"}): --log-compression lz4 (and no flag) stores lz4, server stores the server's pglz`, async () => {
  if (lz4Source === undefined) {
    throw new Error(
      "no PostgreSQL with lz4 here: install Debian's postgresql (`pnpm test` does, through scripts/ensure-test-packages.sh) or set GOLEM_STREAM_PG_URL",
    );
  }
  const postgres = serverOf(withLz4, lz4Source);
  expect(await hasLz4(postgres), `${lz4Source ?? ""} was built without lz4`).toBe(true);
  const [asLz4, asServer, asDefault] = await Promise.all([
    storedInputAs(postgres, ["--log-compression", "lz4"]),
    storedInputAs(postgres, ["--log-compression", "server"]),
    storedInputAs(postgres, []),
  ]);
  expect(asLz4).toEqual(["lz4"]);
  expect(asServer).toEqual(["pglz"]);
  expect(asDefault).toEqual(["lz4"]);
}, 60_000);
