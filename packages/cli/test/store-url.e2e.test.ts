/**
 * The pieces of cluster mode that need no processes: the strict store URL
 * (never quoting the password) and the keyring file that several nodes may
 * create at once.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CliError } from "../src/exit-codes.js";
import { loadOrCreateKeyringFile } from "../src/keyring-file.js";
import { parseStoreUrl, scrub } from "../src/store-url.js";
import { scratchDir } from "./support/processes.js";

it("accepts postgres:// and postgresql:// URLs with a user, a host and a database, and shows them without the password", () => {
  expect(parseStoreUrl("postgres://golem:s3cret@db.internal:5432/sessions", "--store")).toEqual({
    connectionString: "postgres://golem:s3cret@db.internal:5432/sessions",
    shown: "postgres://golem@db.internal:5432/sessions",
    password: "s3cret",
  });
  expect(parseStoreUrl("postgresql://golem@[::1]/sessions?sslmode=require", "--store").shown).toBe(
    "postgresql://golem@[::1]/sessions?sslmode=require",
  );
  expect(parseStoreUrl("POSTGRES://golem:p%40ss@h/db", "--store").password).toBe("p@ss");
});

it("takes libpq's TLS parameters, and says why it refuses allow and uselibpqcompat", () => {
  const tls = "postgres://golem@db/sessions?sslmode=verify-full&sslrootcert=/etc/ca.crt&sslcert=/etc/c.crt&sslkey=/etc/c.key";
  expect(parseStoreUrl(tls, "--store").connectionString).toBe(tls);
  for (const sslmode of ["disable", "prefer", "require", "verify-ca", "verify-full"]) {
    expect(parseStoreUrl(`postgres://golem@db/sessions?sslmode=${sslmode}`, "--store").shown).toContain(sslmode);
  }
  expect(() => parseStoreUrl("postgres://golem@db/sessions?sslmode=allow", "--store")).toThrow(/sslmode=allow is not supported/);
  expect(() => parseStoreUrl("postgres://golem@db/sessions?uselibpqcompat=true&sslmode=require", "--store")).toThrow(
    /uselibpqcompat is not needed: sslmode already means what it means to libpq/,
  );
  expect(() => parseStoreUrl("postgres://golem@db/sessions?sslrootcert=", "--store")).toThrow(/sslrootcert needs a file/);
});

it("refuses anything else with a usage error that never quotes the value", () => {
  const bad = [
    "pg://u:pw-secret@h/db",
    "http://u:pw-secret@h/db",
    "postgres://h/db",
    "postgres://u:pw-secret@/db",
    "postgres://u:pw-secret@h",
    "postgres://u:pw-secret@h/",
    "postgres://u:pw-secret@h/db/more",
    "postgres://u:pw-secret@h/db?sslmode=sometimes",
    "postgres://u:pw-secret@h/db?host=/tmp",
    "postgres://u:pw-secret@h/db#x",
    "postgres://u:pw-secret@h:99999/db",
    "pw-secret",
    "",
  ];
  for (const text of bad) {
    let error: unknown;
    try {
      parseStoreUrl(text, "--store");
    } catch (caught) {
      error = caught;
    }
    expect(error, text).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    expect((error as CliError).message).toMatch(/^--store: /);
    expect((error as CliError).message).not.toContain("pw-secret");
  }
});

it("scrubs a password, plain or percent-encoded, from a message", () => {
  expect(scrub('password "p@ss" for p%40ss failed', "p@ss")).toBe('password "****" for **** failed');
  expect(scrub("nothing to hide", undefined)).toBe("nothing to hide");
});

it("nodes creating a missing keyring file at once all end up with the same keys; the file is owner-only", async () => {
  const path = join(scratchDir(), "shared", "keyring.json");
  const results = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateKeyringFile(path)));
  expect(results.filter((r) => r.created)).toHaveLength(1);
  const exported = new Set(results.map((r) => r.keyring.exportKeyringJson()));
  expect(exported.size).toBe(1);
  expect(readFileSync(path, "utf8")).toBe([...exported][0]);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect((await loadOrCreateKeyringFile(path)).created).toBe(false);
});
