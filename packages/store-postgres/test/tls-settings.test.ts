/**
 * The `ssl` a store gives `pg` for each of libpq's `sslmode`s, from the connection string, the
 * PGSSL* variables or libpq's default files in `~/.postgresql/` (HOME given in each test's
 * environment: an empty home unless a test fills one); the fallback of `prefer` and the certificates themselves are exercised
 * against PostgreSQL in tls.e2e.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { connectionTarget } from "../src/connection-target.js";
import { takeTlsParameters, tlsSettings } from "../src/tls-settings.js";

const directory = mkdtempSync(join(tmpdir(), "tls-settings-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(directory, name);
  writeFileSync(path, text);
  return path;
};
const root = file("root.crt", "ROOT");
const cert = file("client.crt", "CERT");
const key = file("client.key", "KEY");
/** A home directory without `.postgresql/`: no default file. */
const bare = { HOME: join(directory, "bare") };

describe("tlsSettings", () => {
  it("maps each mode as libpq defines it", () => {
    expect(tlsSettings({ sslmode: "disable" }, undefined, bare)).toEqual({ ssl: false, prefer: false });
    expect(tlsSettings({ sslmode: "prefer" }, undefined, bare)).toEqual({ ssl: { rejectUnauthorized: false }, prefer: true });
    expect(tlsSettings({ sslmode: "require" }, undefined, bare)).toEqual({ ssl: { rejectUnauthorized: false }, prefer: false });
    expect(tlsSettings({ sslmode: "no-verify" }, undefined, bare)).toEqual({ ssl: { rejectUnauthorized: false }, prefer: false });
    expect(tlsSettings({ sslmode: "verify-full", sslrootcert: root }, undefined, bare)).toEqual({ ssl: { ca: "ROOT" }, prefer: false });
    // verify-ca and require with a root certificate: the chain is checked, the host name is not.
    for (const sslmode of ["verify-ca", "require"]) {
      const { ssl } = tlsSettings({ sslmode, sslrootcert: root }, undefined, bare);
      expect(ssl).toMatchObject({ ca: "ROOT" });
      expect(ssl).not.toHaveProperty("rejectUnauthorized");
      expect((ssl as { checkServerIdentity: () => unknown }).checkServerIdentity()).toBeUndefined();
    }
  });

  it("without sslmode: no TLS, as pg, unless pool.ssl says otherwise; a file alone asks for require", () => {
    expect(tlsSettings({}, undefined, bare)).toEqual({ ssl: false, prefer: false });
    expect(tlsSettings({}, { ca: "X" }, bare)).toEqual({ ssl: { ca: "X" }, prefer: false });
    expect(tlsSettings({ sslrootcert: root }, undefined, bare).ssl).toMatchObject({ ca: "ROOT" });
  });

  it("reads the client certificate and key", () => {
    expect(tlsSettings({ sslmode: "require", sslcert: cert, sslkey: key }, undefined, bare).ssl).toEqual({
      cert: "CERT",
      key: "KEY",
      rejectUnauthorized: false,
    });
  });

  it("takes the PGSSL* variables where the connection string says nothing, the connection string first", () => {
    const env = { ...bare, PGSSLMODE: "verify-ca", PGSSLROOTCERT: root, PGSSLCERT: cert, PGSSLKEY: key };
    expect(tlsSettings({}, undefined, env).ssl).toMatchObject({ ca: "ROOT", cert: "CERT", key: "KEY" });
    expect(tlsSettings({ sslmode: "disable" }, undefined, env).ssl).toBe(false);
    expect(tlsSettings({}, undefined, { ...bare, PGSSLMODE: "require" }).ssl).toEqual({ rejectUnauthorized: false });
  });

  it("never lets the PGSSL* variables override an ssl set in code: pool.ssl or the URL's ssl", () => {
    const pinned = { ca: "CA", rejectUnauthorized: true };
    for (const env of [{ PGSSLMODE: "require" }, { PGSSLMODE: "disable" }, { PGSSLROOTCERT: root }].map((vars) => ({ ...bare, ...vars }))) {
      expect(tlsSettings({}, pinned, env)).toEqual({ ssl: pinned, prefer: false });
      expect(tlsSettings({}, true, env)).toEqual({ ssl: true, prefer: false });
    }
    // The connection string's own parameters still say how, over pool.ssl.
    expect(tlsSettings({ sslmode: "disable" }, pinned, bare)).toEqual({ ssl: false, prefer: false });
  });

  it("sslrootcert=system: the trusted roots, verify-full by default and only then", () => {
    expect(tlsSettings({ sslrootcert: "system" }, undefined, bare)).toEqual({ ssl: {}, prefer: false });
    expect(() => tlsSettings({ sslrootcert: "system", sslmode: "require" }, undefined, bare)).toThrow(
      /sslrootcert=system needs sslmode=verify-full/,
    );
  });

  it("refuses allow, a mode that is none and a file it cannot read", () => {
    expect(() => tlsSettings({ sslmode: "allow" }, undefined, bare)).toThrow(/sslmode=allow is not supported/);
    expect(() => tlsSettings({ sslmode: "verify" }, undefined, bare)).toThrow(/sslmode=verify is not a mode; use one of disable, prefer/);
    expect(() => tlsSettings({ sslmode: "require", sslrootcert: join(directory, "none") }, undefined, bare)).toThrow(
      /TLS settings \(sslmode=require\): ENOENT.*none/,
    );
  });
});

describe("libpq's default files in ~/.postgresql/", () => {
  const home = join(directory, "home");
  const defaults = join(home, ".postgresql");
  mkdirSync(defaults, { recursive: true });
  const defaultRoot = join(defaults, "root.crt");
  writeFileSync(defaultRoot, "DEFAULT ROOT");
  writeFileSync(join(defaults, "postgresql.crt"), "DEFAULT CERT");
  writeFileSync(join(defaults, "postgresql.key"), "DEFAULT KEY");
  const env = { HOME: home };

  it("verify-ca and verify-full without sslrootcert trust root.crt, and fail naming it where it is missing", () => {
    for (const sslmode of ["verify-ca", "verify-full"]) {
      expect(tlsSettings({ sslmode }, undefined, env).ssl).toMatchObject({ ca: "DEFAULT ROOT" });
      expect(() => tlsSettings({ sslmode }, undefined, bare)).toThrow(
        `sslmode=${sslmode} verifies the server's certificate against the root certificates in sslrootcert, none is given, ` +
          `and the file ${join(bare.HOME, ".postgresql", "root.crt")} does not exist: put the CAs to trust there`,
      );
    }
    const { ssl } = tlsSettings({ sslmode: "verify-ca" }, undefined, env);
    expect((ssl as { checkServerIdentity: () => unknown }).checkServerIdentity()).toBeUndefined();
  });

  it("require with root.crt checks the chain, as with a named sslrootcert; without it, nothing", () => {
    const { ssl } = tlsSettings({ sslmode: "require" }, undefined, env);
    expect(ssl).toMatchObject({ ca: "DEFAULT ROOT" });
    expect(ssl).not.toHaveProperty("rejectUnauthorized");
    expect(tlsSettings({ sslmode: "require" }, undefined, bare).ssl).toEqual({ rejectUnauthorized: false });
  });

  it("presents postgresql.crt with postgresql.key, in every mode with TLS", () => {
    for (const sslmode of ["prefer", "require", "verify-full"]) {
      expect(tlsSettings({ sslmode }, undefined, env).ssl).toMatchObject({ cert: "DEFAULT CERT", key: "DEFAULT KEY" });
    }
    // A certificate named without its key takes the default key.
    expect(tlsSettings({ sslmode: "require", sslcert: cert }, undefined, env).ssl).toMatchObject({ cert: "CERT", key: "DEFAULT KEY" });
    expect(() => tlsSettings({ sslmode: "require", sslcert: cert }, undefined, bare)).toThrow(
      `the client certificate ${cert} has no private key: sslkey (or PGSSLKEY) names none, ` +
        `and the file ${join(bare.HOME, ".postgresql", "postgresql.key")} does not exist`,
    );
  });

  it("a file named, in the URL or a variable, comes first", () => {
    expect(tlsSettings({ sslmode: "verify-ca", sslrootcert: root, sslcert: cert, sslkey: key }, undefined, env).ssl).toMatchObject({
      ca: "ROOT",
      cert: "CERT",
      key: "KEY",
    });
    expect(tlsSettings({}, undefined, { ...env, PGSSLMODE: "verify-full", PGSSLROOTCERT: root }).ssl).toMatchObject({
      ca: "ROOT",
      cert: "DEFAULT CERT",
    });
  });

  it("sslrootcert=system trusts Node's CAs, not root.crt", () => {
    expect(tlsSettings({ sslrootcert: "system" }, undefined, env).ssl).not.toHaveProperty("ca");
    expect(tlsSettings({ sslrootcert: "system" }, undefined, bare)).toEqual({ ssl: {}, prefer: false });
  });

  it("never turn TLS on, nor add to an ssl set in code or a disabled one", () => {
    expect(tlsSettings({}, undefined, env)).toEqual({ ssl: false, prefer: false });
    expect(tlsSettings({}, { ca: "X" }, env)).toEqual({ ssl: { ca: "X" }, prefer: false });
    expect(tlsSettings({ sslmode: "disable" }, undefined, env)).toEqual({ ssl: false, prefer: false });
  });
});

describe("the connection string", () => {
  it("loses its TLS parameters to tlsSettings, and keeps the others", () => {
    expect(takeTlsParameters("postgres://u@h/d?sslmode=require&application_name=a&sslrootcert=%2Fr")).toEqual({
      rest: "postgres://u@h/d?application_name=a",
      parameters: { sslmode: "require", sslrootcert: "/r" },
    });
    expect(takeTlsParameters("postgres://u@h/d")).toEqual({ rest: "postgres://u@h/d", parameters: {} });
  });

  it("gives pg an explicit ssl and no connection string, so pg neither parses sslmode nor warns about it", () => {
    const { config, preferTls } = connectionTarget(`postgres://u:p@h:5433/d?sslmode=require&sslrootcert=${encodeURIComponent(root)}`);
    expect(config).not.toHaveProperty("connectionString");
    expect(config).toMatchObject({ user: "u", host: "h", port: 5433, database: "d", ssl: { ca: "ROOT" } });
    expect(config).not.toHaveProperty("sslmode");
    expect(preferTls).toBe(false);
  });
});
