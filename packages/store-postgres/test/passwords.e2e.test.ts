/**
 * Where a store's password comes from, as libpq takes it: the URL, PGPASSWORD, or the password
 * file (PGPASSFILE, default ~/.pgpass). With none, the store says so instead of failing inside
 * SCRAM, and the password file is read without pg's deprecation warning.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, expect, it } from "vitest";
import { PostgresSessionStore } from "../src/index.js";
import { cleanUp, connect, pgUrl } from "./support/stores.js";

afterAll(cleanUp);

const directory = mkdtempSync(join(tmpdir(), "pgpass-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const saved = { PGPASSWORD: process.env.PGPASSWORD, PGPASSFILE: process.env.PGPASSFILE };
beforeEach(() => {
  delete process.env.PGPASSWORD;
  process.env.PGPASSFILE = join(directory, "missing");
});
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** The test database's URL without its password, and the password. */
function withoutPassword(): { url: string; password: string; host: string; port: string; user: string } {
  const url = new URL(pgUrl());
  const password = decodeURIComponent(url.password);
  const { hostname: host, port, username: user } = url;
  url.password = "";
  return { url: url.toString(), password, host, port, user };
}

it("without a password anywhere, opening says none was given and where to put one", async () => {
  process.env.PGPASSWORD = "";
  const { url, user } = withoutPassword();
  const store = new PostgresSessionStore({ connectionString: url, connectTimeoutMs: 5_000 });
  await expect(store.open()).rejects.toThrow(
    new RegExp(`no password given for the role ${user}.*connection URL, in PGPASSWORD, or in the password file .*missing`),
  );
  await store.close();
});

it("takes the password from the password file, without a deprecation warning", async () => {
  const { url, password, host, port, user } = withoutPassword();
  const file = join(directory, "pgpass");
  writeFileSync(file, `${host}:${port}:*:${user}:${password.replace(/[\\:]/g, "\\$&")}\n`);
  chmodSync(file, 0o600);
  process.env.PGPASSFILE = file;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on("warning", onWarning);
  try {
    const store = await connect({ connectionString: url });
    await expect(store.ping()).resolves.toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 10));
  } finally {
    process.off("warning", onWarning);
  }
  expect(warnings.filter((warning) => /pgpass/i.test(warning))).toEqual([]);
});

it("takes the password from PGPASSWORD", async () => {
  const { url, password } = withoutPassword();
  process.env.PGPASSWORD = password;
  const store = await connect({ connectionString: url });
  await expect(store.ping()).resolves.toBeUndefined();
});
