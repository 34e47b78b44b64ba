/**
 * TLS to a real PostgreSQL, as libpq's sslmode has it: a server of its own with `ssl = on`, its
 * certificate issued by a throwaway CA (openssl), which asks clients for theirs. `require` takes
 * a certificate it cannot verify, `verify-full` verifies it against `sslrootcert`, `sslcert` and
 * `sslkey` present the client's, `prefer` uses TLS where the server offers it and goes without
 * against the tests' server, which does not; and pg's warning about sslmode is never printed.
 * Files not named are libpq's defaults in `~/.postgresql/`: HOME is a directory of the test's own.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalPostgres, type LocalPostgres } from "../src/local-postgres.js";
import { PostgresSessionStore } from "../src/index.js";
import { cleanUp, freshSchema, pgUrl } from "./support/stores.js";

const directory = mkdtempSync(join(tmpdir(), "tls-"));
const path = (name: string) => join(directory, name);
/** The home directory the store looks in for `.postgresql/` (HOME, while the tests run). */
const home = path("home");
const previousHome = process.env.HOME;
let server: LocalPostgres;
const stores: PostgresSessionStore[] = [];
const warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { cwd: directory, stdio: "pipe" });
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate for the role postgres, all issued by it. */
function makeCertificates(): void {
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.crt");
  for (const [name, subject, extension] of [
    ["server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
    ["client", "/CN=postgres", "keyUsage=digitalSignature"],
  ] as const) {
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", `${name}.key`, "-out", `${name}.csr`);
    writeFileSync(path(`${name}.ext`), `${extension}\n`);
    const issue = ["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2"];
    openssl(...issue, "-extfile", `${name}.ext`, "-out", `${name}.crt`);
  }
}

beforeAll(async () => {
  makeCertificates();
  chmodSync(directory, 0o755);
  for (const name of ["ca.crt", "server.crt", "client.crt"]) chmodSync(path(name), 0o644);
  chmodSync(path("server.key"), 0o600);
  chmodSync(path("client.key"), 0o600);
  // As root, PostgreSQL runs as the user postgres (local-postgres.ts), which must own its key.
  if (userInfo().uid === 0) execFileSync("chown", ["postgres", path("server.key")]);
  server = await startLocalPostgres({
    database: "tls",
    settings: { ssl: "on", ssl_cert_file: path("server.crt"), ssl_key_file: path("server.key"), ssl_ca_file: path("ca.crt") },
  });
  process.on("warning", onWarning);
  mkdirSync(home);
  process.env.HOME = home;
}, 120_000);

afterAll(async () => {
  process.off("warning", onWarning);
  if (previousHome === undefined) delete process.env.HOME;
  else process.env.HOME = previousHome;
  await Promise.all(stores.map((store) => store.close()));
  await cleanUp();
  await server?.stop();
  rmSync(directory, { recursive: true, force: true });
});

/** The server's URL with `parameters`, and an application name to find the store's connections by. */
function url(base: string, parameters: Record<string, string>): { text: string; name: string } {
  const target = new URL(base);
  const name = `tls-${Math.random().toString(36).slice(2, 10)}`;
  for (const [key, value] of Object.entries({ ...parameters, application_name: name })) target.searchParams.set(key, value);
  return { text: target.toString(), name };
}

async function open(text: string): Promise<PostgresSessionStore> {
  const store = await PostgresSessionStore.connect({
    connectionString: text,
    schema: freshSchema(),
    pool: { max: 2 },
    connectTimeoutMs: 5_000,
  });
  stores.push(store);
  return store;
}

/** Whether each connection named `name` on the server of `base` uses TLS, and its client certificate's subject. */
async function connectionsOf(base: string, name: string): Promise<{ ssl: boolean; client_dn: string | null }[]> {
  const admin = new pg.Client({ connectionString: base, ssl: false });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ ssl: boolean; client_dn: string | null }>(
      "SELECT s.ssl, s.client_dn FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
      [name],
    );
    return rows;
  } finally {
    await admin.end();
  }
}

it("require takes a certificate it cannot verify, without pg's warning about sslmode", async () => {
  const { text, name } = url(server.url, { sslmode: "require" });
  await open(text);
  const connections = await connectionsOf(server.url, name);
  expect(connections.length).toBeGreaterThan(0);
  expect(connections.every((connection) => connection.ssl)).toBe(true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  expect(warnings.filter((warning) => /ssl/i.test(warning))).toEqual([]);
});

it("verify-full refuses the certificate without its root, and takes it with sslrootcert", async () => {
  await expect(open(url(server.url, { sslmode: "verify-full", sslrootcert: "system" }).text)).rejects.toThrow(/certificate/);
  const { text, name } = url(server.url, { sslmode: "verify-full", sslrootcert: path("ca.crt") });
  await open(text);
  expect((await connectionsOf(server.url, name)).every((connection) => connection.ssl)).toBe(true);
});

it("sslcert and sslkey present the client's certificate", async () => {
  const { text, name } = url(server.url, {
    sslmode: "verify-ca",
    sslrootcert: path("ca.crt"),
    sslcert: path("client.crt"),
    sslkey: path("client.key"),
  });
  await open(text);
  const connections = await connectionsOf(server.url, name);
  expect(connections.length).toBeGreaterThan(0);
  expect(connections.every((connection) => connection.ssl && /CN=postgres/.test(connection.client_dn ?? ""))).toBe(true);
});

it("without sslrootcert, sslcert and sslkey: ~/.postgresql/root.crt, postgresql.crt and postgresql.key, as libpq", async () => {
  const defaults = join(home, ".postgresql");
  await expect(open(url(server.url, { sslmode: "verify-full" }).text)).rejects.toThrow(
    `the file ${join(defaults, "root.crt")} does not exist: put the CAs to trust there`,
  );
  mkdirSync(defaults);
  try {
    copyFileSync(path("ca.crt"), join(defaults, "root.crt"));
    copyFileSync(path("client.crt"), join(defaults, "postgresql.crt"));
    copyFileSync(path("client.key"), join(defaults, "postgresql.key"));
    const { text, name } = url(server.url, { sslmode: "verify-full" });
    await open(text);
    const connections = await connectionsOf(server.url, name);
    expect(connections.length).toBeGreaterThan(0);
    expect(connections.every((connection) => connection.ssl && /CN=postgres/.test(connection.client_dn ?? ""))).toBe(true);
  } finally {
    rmSync(defaults, { recursive: true, force: true });
  }
});

it("prefer uses TLS where the server offers it, and goes without where it does not", async () => {
  const withTls = url(server.url, { sslmode: "prefer" });
  await open(withTls.text);
  expect((await connectionsOf(server.url, withTls.name)).every((connection) => connection.ssl)).toBe(true);
  const without = url(pgUrl(), { sslmode: "prefer" });
  const store = await open(without.text);
  await expect(store.ping()).resolves.toBeUndefined();
  const connections = await connectionsOf(pgUrl(), without.name);
  expect(connections.length).toBeGreaterThan(0);
  expect(connections.every((connection) => !connection.ssl)).toBe(true);
  await store.close();
});
