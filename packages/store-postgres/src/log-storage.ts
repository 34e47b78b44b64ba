/**
 * How PostgreSQL stores the two logs' rows: whole, in the table's page,
 * not compressed, whenever a row fits one.
 *
 * PostgreSQL compresses (TOASTs) a row's `bytea` values as soon as the row
 * is over about 2 KB (`toast_tuple_target`, 2032 by default), so every
 * packed row of small items (`maxPackedRowBytes`) went through `pglz` on
 * commit and back through it on every read: the users' bytes, measured at
 * 14 % of PostgreSQL's CPU in `tally` and 50 % in `digest` (`perf` of the
 * backends; docs/performance.md). With `toast_tuple_target` at its largest
 * (8160 bytes on 8 KiB pages), a row that fits a page is kept as it is;
 * a larger one (a 1 MiB batch) is compressed and stored out of line as
 * before.
 *
 * Rows that do not fit a page are compressed, with lz4 where the server
 * has it (PostgreSQL 14 and later, built with lz4): the writer connection
 * sets `default_toast_compression = lz4` for itself, which PostgreSQL uses
 * for every column without a compression method of its own. lz4 costs a
 * fraction of pglz's CPU (text: 3.8 against 20.4 ms per MiB committed)
 * and still compresses. Only new values are written so; reading any value
 * is PostgreSQL's work, so every node, of any version, reads them.
 *
 * Not a numbered migration: it changes no row and how no row is read, so
 * the schema version stays and a node of an earlier version still starts
 * against a database that has it. It is applied at `open()`, inside the
 * migration transaction, only to a log table that has no
 * `toast_tuple_target` of its own: an operator's value (e.g. PostgreSQL's
 * default, 2032, to keep compressing) is left alone, and a node whose role
 * does not own the tables starts without it. `ALTER TABLE … SET
 * (toast_tuple_target …)` takes a SHARE UPDATE EXCLUSIVE lock, which
 * reads and writes of the table do not wait for (only VACUUM and other
 * schema changes), and it affects only rows written afterwards.
 */
import type pg from "pg";

/** The largest `toast_tuple_target` PostgreSQL accepts on 8 KiB pages: a row up to a page stays in it, uncompressed. */
export const LOG_TOAST_TUPLE_TARGET = 8160;

/** The tables the setting is made on. */
export const LOG_TABLES = ["input_chunks", "output_events"] as const;

/**
 * Sets `toast_tuple_target` on each log table of schema `s` (already checked) that has none; for
 * `migrate`'s transaction. On a server built with pages other than 8 KiB the largest target there
 * is used when smaller (PostgreSQL refuses a target over its page's room: block size - 32).
 */
export async function applyLogStorage(client: pg.ClientBase, s: string): Promise<void> {
  const { rows } = await client.query<{ table: string; block: number }>(
    `SELECT c.relname AS table, current_setting('block_size')::int AS block FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = ANY($2::text[])
        AND NOT EXISTS (SELECT 1 FROM unnest(c.reloptions) AS o WHERE o LIKE 'toast_tuple_target=%')`,
    [s, LOG_TABLES],
  );
  if (rows.length === 0) return;
  // A node whose role does not own the tables cannot set it: it starts anyway (an owner's open sets it).
  await client.query("SAVEPOINT log_storage");
  try {
    for (const { table, block } of rows) {
      const target = Math.min(LOG_TOAST_TUPLE_TARGET, block - 32);
      await client.query(`ALTER TABLE ${s}.${table} SET (toast_tuple_target = ${target})`);
    }
    await client.query("RELEASE SAVEPOINT log_storage");
  } catch (error) {
    if ((error as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw error;
    await client.query("ROLLBACK TO SAVEPOINT log_storage");
  }
}

/** SQLSTATE 42501: ALTER TABLE by a role that does not own the table. */
const INSUFFICIENT_PRIVILEGE = "42501";

/** `logCompression`: lz4 where the server has it (default), or whatever the server's `default_toast_compression` is. */
export type LogCompression = "lz4" | "server";

/** Whether the server can compress with lz4 (an lz4 build of PostgreSQL 14 or later). */
export async function serverHasLz4(db: pg.ClientBase | pg.Pool): Promise<boolean> {
  const { rows } = await db.query<{ lz4: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)) AS lz4`,
  );
  return rows[0]?.lz4 === true;
}

/** What the writer connection runs once connected, if anything: lz4 when asked for and the server has it. */
export function writerSetup(compression: LogCompression, lz4: boolean): string | undefined {
  return compression === "lz4" && lz4 ? "SET default_toast_compression = lz4" : undefined;
}
