/**
 * The `ssl` a store gives `pg` for each of libpq's `sslmode`s, from the connection string or the
 * PGSSL* variables; the fallback of `prefer` and the certificates themselves are exercised
 * against PostgreSQL in tls.e2e.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

describe("tlsSettings", () => {
  it("maps each mode as libpq defines it", () => {
    expect(tlsSettings({ sslmode: "disable" }, undefined, {})).toEqual({ ssl: false, prefer: false });
    expect(tlsSettings({ sslmode: "prefer" }, undefined, {})).toEqual({ ssl: { rejectUnauthorized: false }, prefer: true });
    expect(tlsSettings({ sslmode: "require" }, undefined, {})).toEqual({ ssl: { rejectUnauthorized: false }, prefer: false });
    expect(tlsSettings({ sslmode: "no-verify" }, undefined, {})).toEqual({ ssl: { rejectUnauthorized: false }, prefer: false });
    expect(tlsSettings({ sslmode: "verify-full" }, undefined, {})).toEqual({ ssl: {}, prefer: false });
    expect(tlsSettings({ sslmode: "verify-full", sslrootcert: root }, undefined, {})).toEqual({ ssl: { ca: "ROOT" }, prefer: false });
    // verify-ca and require with a root certificate: the chain is checked, the host name is not.
    for (const sslmode of ["verify-ca", "require"]) {
      const { ssl } = tlsSettings({ sslmode, sslrootcert: root }, undefined, {});
      expect(ssl).toMatchObject({ ca: "ROOT" });
      expect(ssl).not.toHaveProperty("rejectUnauthorized");
      expect((ssl as { checkServerIdentity: () => unknown }).checkServerIdentity()).toBeUndefined();
    }
  });

  it("without sslmode: no TLS, as pg, unless pool.ssl says otherwise; a file alone asks for require", () => {
    expect(tlsSettings({}, undefined, {})).toEqual({ ssl: false, prefer: false });
    expect(tlsSettings({}, { ca: "X" }, {})).toEqual({ ssl: { ca: "X" }, prefer: false });
    expect(tlsSettings({ sslrootcert: root }, undefined, {}).ssl).toMatchObject({ ca: "ROOT" });
  });

  it("reads the client certificate and key", () => {
    expect(tlsSettings({ sslmode: "require", sslcert: cert, sslkey: key }, undefined, {}).ssl).toEqual({
      cert: "CERT",
      key: "KEY",
      rejectUnauthorized: false,
    });
  });

  it("takes the PGSSL* variables where the connection string says nothing, the connection string first", () => {
    const env = { PGSSLMODE: "verify-ca", PGSSLROOTCERT: root, PGSSLCERT: cert, PGSSLKEY: key };
    expect(tlsSettings({}, undefined, env).ssl).toMatchObject({ ca: "ROOT", cert: "CERT", key: "KEY" });
    expect(tlsSettings({ sslmode: "disable" }, undefined, env).ssl).toBe(false);
    expect(tlsSettings({}, undefined, { PGSSLMODE: "require" }).ssl).toEqual({ rejectUnauthorized: false });
  });

  it("never lets the PGSSL* variables override an ssl set in code: pool.ssl or the URL's ssl", () => {
    const pinned = { ca: "CA", rejectUnauthorized: true };
    for (const env of [{ PGSSLMODE: "require" }, { PGSSLMODE: "disable" }, { PGSSLROOTCERT: root }]) {
      expect(tlsSettings({}, pinned, env)).toEqual({ ssl: pinned, prefer: false });
      expect(tlsSettings({}, true, env)).toEqual({ ssl: true, prefer: false });
    }
    // The connection string's own parameters still say how, over pool.ssl.
    expect(tlsSettings({ sslmode: "disable" }, pinned, {})).toEqual({ ssl: false, prefer: false });
  });

  it("sslrootcert=system: the trusted roots, verify-full by default and only then", () => {
    expect(tlsSettings({ sslrootcert: "system" }, undefined, {})).toEqual({ ssl: {}, prefer: false });
    expect(() => tlsSettings({ sslrootcert: "system", sslmode: "require" }, undefined, {})).toThrow(
      /sslrootcert=system needs sslmode=verify-full/,
    );
  });

  it("refuses allow, a mode that is none, verify-ca without a root certificate and a file it cannot read", () => {
    expect(() => tlsSettings({ sslmode: "allow" }, undefined, {})).toThrow(/sslmode=allow is not supported/);
    expect(() => tlsSettings({ sslmode: "verify" }, undefined, {})).toThrow(/sslmode=verify is not a mode; use one of disable, prefer/);
    expect(() => tlsSettings({ sslmode: "verify-ca" }, undefined, {})).toThrow(/verify-ca requires specifying a CA with sslrootcert/);
    expect(() => tlsSettings({ sslmode: "require", sslrootcert: join(directory, "none") }, undefined, {})).toThrow(
      /TLS settings \(sslmode=require\): ENOENT.*none/,
    );
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
