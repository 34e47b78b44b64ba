/**
 * Which SQLite errors are worth waiting out (the store's outage grace,
 * `outage-grace.ts`): the database is busy or locked by another connection,
 * or an I/O error that may pass (a network file system, a disk that stalled).
 * A group that fails with one was rolled back as a whole (better-sqlite3 rolls
 * back a transaction whose function threw), so it is written again, before
 * every later write. A full disk (SQLITE_FULL) is not among them: it is
 * reported at once; it lasts until someone frees space.
 */
export function isTransientSqliteError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED") || code.startsWith("SQLITE_IOERR");
}
