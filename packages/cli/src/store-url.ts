/**
 * `serve --store` (or `$GOLEM_STREAM_STORE`): where a cluster keeps its
 * sessions. Only PostgreSQL URLs, checked strictly before anything connects:
 * `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE]` (or
 * `postgresql://`). The password may also come from `$PGPASSWORD` or the
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

const SSL_MODES = ["disable", "prefer", "require", "no-verify", "verify-ca", "verify-full"];
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
    if (name !== "sslmode") throw fail(`unknown parameter ${JSON.stringify(name)}; only sslmode is allowed`);
    if (!SSL_MODES.includes(value)) throw fail(`sslmode must be one of ${SSL_MODES.join(", ")}`);
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
