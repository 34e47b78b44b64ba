/**
 * Where and as whom every connection of a store connects: the connection
 * string, parsed by the `pg-connection-string` that `pg` itself uses, over
 * `pool`'s settings; the password, looked up as libpq does; and TLS, as
 * libpq's `sslmode` (`tls-settings.ts`).
 *
 * The password is given to `pg` as a function, asked only when the server
 * wants one: the connection string's, else `PGPASSWORD`, else the password
 * file (`PGPASSFILE`, default `~/.pgpass`), read by the `pgpass` module `pg`
 * reads it with. `pg`'s own fallback to that file prints a deprecation
 * warning, and when nothing gave a password it sent none and failed inside
 * SCRAM (`client password must be a string`); this says what is missing.
 */
import { createRequire } from "node:module";
import type pg from "pg";
import { takeTlsParameters, tlsSettings } from "./tls-settings.js";

/** `pg`'s own copies of its helpers, not ones of ours: the same parsing and the same file rules as `pg`. */
const fromPg = createRequire(createRequire(import.meta.url).resolve("pg"));

interface PgConnectionString {
  parseIntoClientConfig(text: string): pg.ClientConfig;
}

/** What `pg` passes a password function: the connection's parameters. */
interface ConnectionParameters {
  readonly host?: string;
  readonly port?: number;
  readonly database?: string;
  readonly user?: string;
}

type PasswordFile = (connection: ConnectionParameters, found: (password: string | undefined) => void) => void;

export interface ConnectionTarget {
  readonly config: pg.ClientConfig;
  /** `sslmode=prefer`: a server that does not offer TLS is connected to without it (`Connections`). */
  readonly preferTls: boolean;
}

/**
 * The settings of `connectionString` (else `pool.connectionString`) over the rest of `pool`, with
 * a password function in place of a password that is missing, and an explicit `ssl`. No
 * `connectionString` goes to `pg`: it would parse it again over these, its missing password over
 * the function and its `sslmode` its own way.
 */
export function connectionTarget(connectionString: string | undefined, pool: pg.PoolConfig = {}): ConnectionTarget {
  const { connectionString: poolConnectionString, ...rest } = pool;
  const text = connectionString ?? poolConnectionString;
  const { rest: withoutTls, parameters } = text === undefined ? { rest: undefined, parameters: {} } : takeTlsParameters(text);
  const fromUrl = withoutTls === undefined ? {} : parseUrl(withoutTls);
  const tls = tlsSettings(parameters, fromUrl.ssl ?? rest.ssl);
  const target: pg.ClientConfig = { ...rest, ...fromUrl, ssl: tls.ssl };
  const given = fromUrl.password ?? rest.password;
  if (typeof given === "function") return { config: target, preferTls: tls.prefer };
  const password = typeof given === "string" && given !== "" ? given : undefined;
  const lookUp = async (parameters: ConnectionParameters) => password ?? (await lookUpPassword(parameters));
  // pg passes the connection's parameters, which its types leave out.
  return { config: { ...target, password: lookUp as () => Promise<string> }, preferTls: tls.prefer };
}

function parseUrl(connectionString: string): pg.ClientConfig {
  const { parseIntoClientConfig } = fromPg("pg-connection-string") as PgConnectionString;
  const config = parseIntoClientConfig(connectionString);
  // A URL without a password parses to "", which would hide `pool`'s.
  if (config.password === "") delete config.password;
  return config;
}

/** `PGPASSWORD`, else the password file's entry for `parameters`; throws, saying where to give one, when neither has it. */
async function lookUpPassword(parameters: ConnectionParameters): Promise<string> {
  const env = process.env;
  // As libpq, an empty PGPASSWORD is no password.
  const fromEnv = env.PGPASSWORD;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  const passwordFile = fromPg("pgpass") as PasswordFile;
  const fromFile = await new Promise<string | undefined>((resolve) => passwordFile(parameters, resolve));
  if (fromFile !== undefined) return fromFile;
  const file = env.PGPASSFILE === undefined || env.PGPASSFILE === "" ? "~/.pgpass" : env.PGPASSFILE;
  throw new Error(
    `no password given for the role ${parameters.user ?? "(none)"}, and the server asks for one: ` +
      `put it in the connection URL, in PGPASSWORD, or in the password file ${file} (PGPASSFILE names another)`,
  );
}
