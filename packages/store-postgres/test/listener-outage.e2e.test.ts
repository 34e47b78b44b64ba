/**
 * A store whose LISTEN connection PostgreSQL ends (as in a restart) reports it where outages are
 * reported, a retry before reconnecting, not as an error: an outage the feed rides out is not
 * one error line per reconnect attempt. Without an outage observer, it stays an error. Pooled
 * and writer connections ended the same way are not errors either while outages are observed.
 */
import type { StoreOutageEvent } from "@golem-stream/server/store";
import { afterAll, expect, it, vi } from "vitest";
import { cleanUp, connect, freshSchema, withAdmin } from "./support/stores.js";

afterAll(cleanUp);

async function terminateListener(schema: string): Promise<void> {
  await withAdmin(async (client) => {
    const { rows } = await client.query<{ ok: boolean }>("SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query = $1", [
      `LISTEN "${schema}_changes"`,
    ]);
    expect(rows).toEqual([{ ok: true }]);
  });
}

it("a listener ended by PostgreSQL is a retry to the outage observer, not an error, and listens again", async () => {
  const schema = freshSchema();
  const errors: Error[] = [];
  const store = await connect({ schema, onError: (error) => void errors.push(error) });
  const outages: StoreOutageEvent[] = [];
  store.observeOutages((event) => outages.push(event));
  await terminateListener(schema);
  await vi.waitFor(() => expect(store.listenerReconnects).toBe(1), { timeout: 5_000 });
  expect(outages).toEqual([{ kind: "retry", error: expect.stringMatching(/terminat/) as unknown, delayMs: 100 }]);
  expect(errors).toEqual([]);
});

it("without an outage observer, it is an error as before", async () => {
  const schema = freshSchema();
  const errors: Error[] = [];
  const store = await connect({ schema, onError: (error) => void errors.push(error) });
  await terminateListener(schema);
  await vi.waitFor(() => expect(store.listenerReconnects).toBe(1), { timeout: 5_000 });
  expect(errors.length).toBeGreaterThan(0);
  expect(errors.map((error) => error.message)).toEqual(errors.map(() => expect.stringMatching(/terminat/) as unknown));
});

it("connections ended by PostgreSQL are not errors while outages are observed: the next read rides it out", async () => {
  const schema = freshSchema();
  const errors: Error[] = [];
  // Named, so that only this store's connections are ended (other test files share the database).
  const store = await connect({ schema, pool: { max: 2, application_name: schema }, onError: (error) => void errors.push(error) });
  store.observeOutages(() => undefined);
  await Promise.all([store.ping(), store.ping(), store.getSession("none")]);
  const ended = await withAdmin(
    async (client) =>
      (await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [schema])).rowCount,
  );
  expect(ended).toBeGreaterThanOrEqual(3); // the listener and the pooled connections
  await vi.waitFor(() => expect(store.listenerReconnects).toBe(1), { timeout: 5_000 });
  await expect(store.getSession("none")).resolves.toBeUndefined();
  expect(errors).toEqual([]);
});
