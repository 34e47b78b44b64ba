/**
 * Loads better-sqlite3, SQLite's native module, when a SQLite store opens and not before.
 *
 * It is an optional dependency of this package: npm installs (and, without a prebuilt binary,
 * compiles) it by default, and a cluster node on PostgreSQL can leave it out
 * (`npm install --omit=optional`) or survive a machine where it cannot be built. Nothing but the
 * SQLite store needs it, so importing the server never loads it.
 */
import { createRequire } from "node:module";
import type Database from "better-sqlite3";

export type BetterSqlite3 = typeof Database;

const requireFromHere = createRequire(import.meta.url);
let loaded: BetterSqlite3 | undefined;

/** better-sqlite3's constructor, loaded once; a missing module is an error that says how to install it. */
export function betterSqlite3(): BetterSqlite3 {
  loaded ??= loadBetterSqlite3(requireFromHere);
  return loaded;
}

/** Loads the module through `load` (a `require`); exported for the test of the missing case. */
export function loadBetterSqlite3(load: (name: string) => unknown): BetterSqlite3 {
  try {
    return load("better-sqlite3") as BetterSqlite3;
  } catch (error) {
    if ((error as { code?: unknown }).code !== "MODULE_NOT_FOUND") throw error;
    throw new Error(
      "the SQLite session store needs better-sqlite3, an optional dependency of @golem-stream/server that is not " +
        "installed (an install with --omit=optional, or a native build that failed): npm install better-sqlite3",
      { cause: error },
    );
  }
}
