/**
 * `serve --store` (or `$GOLEM_STREAM_STORE`): where a cluster keeps its
 * sessions. Only PostgreSQL URLs, checked strictly before anything connects:
 * `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (or `postgresql://`),
 * with libpq's TLS parameters `sslmode`, `sslrootcert`, `sslcert` and
 * `sslkey` only (the store applies them as libpq does). The password may also come from `$PGPASSWORD` or the
 * password file (`$PGPASSFILE`, default `~/.pgpass`), as the store looks it up.
 *
 * Nothing here ever puts the password in a message: errors describe the
 * problem without quoting the value, and `shown` is the URL without it.
 */
import { usageError } from "./exit-codes.js";

export interface StoreUrl {
  /** The URL as given, for the driver: holds the password, if any. Never print it. */
  readonly connectionString: string;
  /** `postgres://user@host:port/db`: safe to print. */
  readonly shown: string;
  /** The password in the URL, so messages can be scrubbed of it. */
  readonly password: string | undefined;
}

/** The store's modes (`tls-settings.ts` of store-postgres): libpq's but `allow`, and `pg`'s `no-verify`. */
const SSL_MODES = ["disable", "prefer", "require", "verify-ca", "verify-full", "no-verify"];
const TLS_FILES = ["sslrootcert", "sslcert", "sslkey"];
const IDENTIFIER = /^[A-Za-z0-9_.-]{1,63}$/;

/** Parses a `--store` value; `source` names where it came from in messages. */
export function parseStoreUrl(text: string, source: string): StoreUrl {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) throw usageError(`${source}: not a URL; expected postgres://USER@HOST:PORT/DATABASE`);
  if (scheme !== "postgres" && scheme !== "postgresql") {
    throw usageError(`${source}: unsupported store ${scheme}://; only PostgreSQL is supported (postgres://USER@HOST:PORT/DATABASE)`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`${source}: not a valid URL; expected postgres://USER@HOST:PORT/DATABASE`);
  }
  let password: string | undefined;
  try {
    password = url.password === "" ? undefined : decodeURIComponent(url.password);
  } catch {
    throw usageError(`${source}: the password is not valid percent-encoding`);
  }
  const fail = (problem: string) => usageError(`${source}: ${problem} (expected postgres://USER@HOST:PORT/DATABASE)`);
  if (url.hostname === "") throw fail("no host");
  if (url.username === "") throw fail("no user");
  let user: string;
  let database: string;
  try {
    user = decodeURIComponent(url.username);
    database = decodeURIComponent(url.pathname.slice(1));
  } catch {
    throw fail("the user or database is not valid percent-encoding");
  }
  if (!IDENTIFIER.test(user)) throw fail("the user must be 1..63 of A-Z a-z 0-9 _ . -");
  if (url.pathname === "/" || url.pathname === "") throw fail("no database");
  if (!IDENTIFIER.test(database)) throw fail("the database must be 1..63 of A-Z a-z 0-9 _ . -");
  if (url.hash !== "") throw fail("a fragment (#...) is not allowed");
  for (const [name, value] of url.searchParams) {
    if (name === "sslmode") {
      if (value === "allow") throw fail("sslmode=allow is not supported (it tries without TLS first): use prefer, disable or require");
      if (!SSL_MODES.includes(value)) throw fail(`sslmode must be one of ${SSL_MODES.join(", ")}`);
    } else if (TLS_FILES.includes(name)) {
      if (value === "") throw fail(`${name} needs a file`);
    } else if (name === "uselibpqcompat") {
      // pg's warning about sslmode suggests it; the store's sslmode is libpq's already.
      throw fail("uselibpqcompat is not needed: sslmode already means what it means to libpq");
    } else {
      throw fail(`unknown parameter ${JSON.stringify(name)}; only sslmode, sslrootcert, sslcert and sslkey are allowed`);
    }
  }
  const port = url.port === "" ? "" : `:${url.port}`;
  const query = url.search;
  return {
    connectionString: text,
    shown: `${scheme}://${url.username}@${url.hostname}${port}/${url.pathname.slice(1)}${query}`,
    password,
  };
}

/** `message` with every occurrence of `secret` (and its percent-encoded form) replaced. */
export function scrub(message: string, secret: string | undefined): string {
  if (secret === undefined || secret === "") return message;
  return message.split(secret).join("****").split(encodeURIComponent(secret)).join("****");
}
