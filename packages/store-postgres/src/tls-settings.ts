/**
 * TLS to PostgreSQL as libpq's `sslmode` defines it (what operators know), from
 * the connection string's `sslmode`, `sslrootcert`, `sslcert` and `sslkey`,
 * else the `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and `PGSSLKEY`
 * variables. `pg` alone treats `prefer`, `require` and `verify-ca` as
 * `verify-full` (and warns so), ignores the variables but `PGSSLMODE`, and
 * never falls back to a plain connection.
 *
 * The mapping of each mode onto Node's TLS options is `pg-connection-string`'s
 * libpq-compatible one (`useLibpqCompat`), which also reads the files; `pg` is
 * then given that explicit `ssl` and never the raw `sslmode`, so it prints no
 * warning. `prefer`'s fallback to a plain connection, for a server that does
 * not offer TLS, is `Connections`' (it needs a second connection attempt).
 *
 * As libpq, a file not named is looked for in `~/.postgresql/` (`%APPDATA%\postgresql\`
 * on Windows) once TLS is asked for: `root.crt` for `sslrootcert` (required by `verify-ca` and
 * `verify-full`; with `require` it checks the chain as `verify-ca` does), `postgresql.crt` for
 * `sslcert`, and `postgresql.key` for the key of a certificate without `sslkey`. These files
 * never turn TLS on by themselves.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";
import type pg from "pg";

const fromPg = createRequire(createRequire(import.meta.url).resolve("pg"));

interface PgConnectionString {
  parse(text: string, options: { useLibpqCompat: boolean }): { ssl?: pg.ClientConfig["ssl"] };
}

/** The modes taken, libpq's but `allow`; `no-verify` is `pg`'s name for `require`. */
export const SSL_MODES = ["disable", "prefer", "require", "verify-ca", "verify-full", "no-verify"] as const;

/** The parameters of a connection string that say how to use TLS, taken out of it here. */
export const TLS_PARAMETERS = ["sslmode", "sslrootcert", "sslcert", "sslkey"] as const;

type TlsParameters = Partial<Record<(typeof TLS_PARAMETERS)[number], string>>;

export interface TlsSettings {
  /** What `pg` is given (undefined: `pool.ssl`, as set). */
  readonly ssl: pg.ClientConfig["ssl"] | undefined;
  /** `prefer`: connect without TLS when the server does not offer it. */
  readonly prefer: boolean;
}

/**
 * The TLS settings for `fromUrl` (the connection string's parameters) over the environment's.
 * Neither saying anything: `pool.ssl` when it is set, else no TLS, as `pg` (libpq's default is
 * `prefer`, which sends every connection's TLS request first: a server or proxy that speaks the
 * protocol but not that request fails it, and `sslmode=prefer` gives libpq's).
 * Files not named are libpq's defaults in `~/.postgresql/`, the home directory being `env.HOME`
 * (else the system's).
 * Throws a `TypeError` naming the parameter for a mode not taken or a file that cannot be read,
 * and naming the file for a default one that is required and missing.
 */
export function tlsSettings(fromUrl: TlsParameters, poolSsl: pg.ClientConfig["ssl"], env: NodeJS.ProcessEnv = process.env): TlsSettings {
  // An `ssl` set in code (or `ssl=true` in the URL) is the program's own choice: the environment,
  // perhaps set for psql, neither weakens it (PGSSLMODE=require would drop its certificate check)
  // nor turns TLS on beside it, as `pg` reads PGSSLMODE only when `ssl` is not set.
  const fromEnv = poolSsl === undefined;
  const given = (name: (typeof TLS_PARAMETERS)[number]) =>
    fromUrl[name] ?? (fromEnv ? nonEmpty(env[`PG${name.toUpperCase()}`]) : undefined);
  const parameters: TlsParameters = {};
  for (const name of TLS_PARAMETERS) {
    const value = given(name);
    if (value !== undefined) parameters[name] = value;
  }
  if (Object.keys(parameters).length === 0) return { ssl: poolSsl ?? false, prefer: false };
  // libpq: sslrootcert=system is the system's trusted roots, and makes verify-full the default.
  const systemRoots = parameters.sslrootcert === "system";
  if (systemRoots) delete parameters.sslrootcert;
  const mode = parameters.sslmode === "no-verify" ? "require" : (parameters.sslmode ?? (systemRoots ? "verify-full" : "require"));
  if (mode === "allow") {
    throw new TypeError("sslmode=allow is not supported (it tries without TLS first): use prefer, or disable, or require");
  }
  if (!(SSL_MODES as readonly string[]).includes(mode)) {
    throw new TypeError(`sslmode=${mode} is not a mode; use one of ${SSL_MODES.join(", ")}`);
  }
  if (systemRoots && mode !== "verify-full")
    throw new TypeError(`sslrootcert=system needs sslmode=verify-full, not ${mode} (as with libpq)`);
  if (mode === "disable") return { ssl: false, prefer: false };
  if (!systemRoots) withDefaultFiles(parameters, mode, env);
  const query = new URLSearchParams({ ...parameters, sslmode: mode });
  let ssl: pg.ClientConfig["ssl"];
  try {
    ({ ssl } = (fromPg("pg-connection-string") as PgConnectionString).parse(`postgres://localhost/?${query.toString()}`, {
      useLibpqCompat: true,
    }));
  } catch (error) {
    throw new TypeError(`TLS settings (sslmode=${mode}): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return { ssl: withoutUnset(ssl), prefer: mode === "prefer" };
}

/** `text` split into the connection string without its TLS parameters, and those parameters. */
export function takeTlsParameters(text: string): { rest: string; parameters: TlsParameters } {
  const start = text.indexOf("?");
  if (start < 0) return { rest: text, parameters: {} };
  const query = new URLSearchParams(text.slice(start + 1));
  const parameters: TlsParameters = {};
  for (const name of TLS_PARAMETERS) {
    const value = query.get(name);
    if (value !== null) parameters[name] = value;
    query.delete(name);
  }
  const left = query.toString();
  return { rest: text.slice(0, start) + (left === "" ? "" : `?${left}`), parameters };
}

/**
 * `parameters` with libpq's default files for those not given: `root.crt` when it exists (else an
 * error for a mode that verifies), `postgresql.crt` when it exists, and the key of a certificate
 * without `sslkey`, `postgresql.key` (else an error: libpq's `certificate present, but not private key file`).
 */
function withDefaultFiles(parameters: TlsParameters, mode: string, env: NodeJS.ProcessEnv): void {
  const directory = defaultsDirectory(env);
  const file = (name: string) => (directory === undefined ? undefined : join(directory, name));
  if (parameters.sslrootcert === undefined) {
    const root = file("root.crt");
    if (root !== undefined && existsSync(root)) parameters.sslrootcert = root;
    else if (mode === "verify-ca" || mode === "verify-full") {
      const missing = root === undefined ? "no home directory to find ~/.postgresql/root.crt in" : `the file ${root} does not exist`;
      throw new TypeError(
        `sslmode=${mode} verifies the server's certificate against the root certificates in sslrootcert, none is given, ` +
          `and ${missing}: put the CAs to trust there, name a file with sslrootcert (or PGSSLROOTCERT), ` +
          `trust the CAs Node trusts with sslrootcert=system (and verify-full), or use sslmode=require, which does not verify`,
      );
    }
  }
  if (parameters.sslcert === undefined) {
    const cert = file("postgresql.crt");
    if (cert !== undefined && existsSync(cert)) parameters.sslcert = cert;
  }
  if (parameters.sslcert !== undefined && parameters.sslkey === undefined) {
    const key = file("postgresql.key");
    if (key === undefined || !existsSync(key)) {
      throw new TypeError(
        `the client certificate ${parameters.sslcert} has no private key: sslkey (or PGSSLKEY) names none, ` +
          `and ${key === undefined ? "there is no home directory to find ~/.postgresql/postgresql.key in" : `the file ${key} does not exist`}`,
      );
    }
    parameters.sslkey = key;
  }
}

/** Where libpq looks for the files not named: `~/.postgresql` (`%APPDATA%\postgresql` on Windows); undefined without a home directory. */
function defaultsDirectory(env: NodeJS.ProcessEnv): string | undefined {
  if (process.platform === "win32") {
    const appData = nonEmpty(env.APPDATA);
    return appData === undefined ? undefined : join(appData, "postgresql");
  }
  // As libpq: HOME, else the user's entry in the password database (which os.homedir() reads then).
  let home = nonEmpty(env.HOME);
  if (home === undefined) {
    try {
      home = nonEmpty(homedir());
    } catch {
      home = undefined;
    }
  }
  return home === undefined ? undefined : join(home, ".postgresql");
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** The options `pg-connection-string` left undefined dropped, as its `toClientConfig` does. */
function withoutUnset(ssl: pg.ClientConfig["ssl"]): pg.ClientConfig["ssl"] {
  if (typeof ssl !== "object") return ssl;
  return Object.fromEntries(Object.entries(ssl).filter(([, value]) => value !== undefined && value !== null));
}
