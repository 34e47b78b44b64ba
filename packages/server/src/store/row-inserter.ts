/**
 * Inserts many rows of one table with multi-row `INSERT` statements: one
 * native call per up to 16 rows instead of one per row. A run of small log
 * appends (64-byte items arriving faster than the disk syncs) spent about as
 * long crossing into SQLite per row as SQLite spent inserting it; measured
 * with better-sqlite3 on the input log's schema, 1.35 µs per row one at a
 * time, 0.86 µs 16 at a time.
 */
import type Database from "better-sqlite3";

/** Rows per statement at most: 16 rows of 9 columns stay far below SQLite's 32 766 parameters. */
const ROWS_PER_STATEMENT = 16;

export class RowInserter {
  readonly #db: Database.Database;
  readonly #table: string;
  readonly #columns: number;
  /** Prepared statements by their row count (1..16), made on first use. */
  readonly #statements: (Database.Statement | undefined)[] = [];
  /** One reused array of parameters per statement size. */
  readonly #params: unknown[][] = [];

  constructor(db: Database.Database, table: string, columns: number) {
    this.#db = db;
    this.#table = table;
    this.#columns = columns;
  }

  /** Inserts `rows` (each the table's values in column order), in order. */
  insertAll(rows: readonly (readonly unknown[])[]): void {
    for (let at = 0; at < rows.length; at += ROWS_PER_STATEMENT) {
      const count = Math.min(ROWS_PER_STATEMENT, rows.length - at);
      const params = (this.#params[count] ??= new Array<unknown>(count * this.#columns));
      for (let r = 0; r < count; r++) {
        const row = rows[at + r] as readonly unknown[];
        if (row.length !== this.#columns) throw new Error(`a row of ${this.#table} needs ${this.#columns} values`);
        for (let c = 0; c < this.#columns; c++) params[r * this.#columns + c] = row[c];
      }
      try {
        this.#statement(count).run(params);
      } finally {
        params.fill(undefined); // hold no payload past the statement
      }
    }
  }

  #statement(count: number): Database.Statement {
    let statement = this.#statements[count];
    if (statement === undefined) {
      const one = `(${new Array(this.#columns).fill("?").join(", ")})`;
      statement = this.#db.prepare(`INSERT INTO ${this.#table} VALUES ${new Array(count).fill(one).join(", ")}`);
      this.#statements[count] = statement;
    }
    return statement;
  }
}
