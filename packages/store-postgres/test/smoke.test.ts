import { expect, inject, it } from "vitest";
import pg from "pg";
it("connects", async () => {
  const c = new pg.Client(inject("pgUrl"));
  await c.connect();
  const r = await c.query("select version()");
  expect(String(r.rows[0].version)).toContain("PostgreSQL");
  await c.end();
});
