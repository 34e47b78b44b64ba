/**
 * A pooled connection's error is heard at every moment, not only while it is idle or checked
 * out: the pool hands a connection to a waiting `checkOut` by resolving its promise, and the
 * caller's listener goes on a microtask later. PostgreSQL stopping (`57P01`, "terminating
 * connection due to administrator command") read in the same chunk as the last statement's
 * answer was emitted in that gap, unheard, and ended a cluster node's process.
 */
import { afterAll, expect, it } from "vitest";
import type pg from "pg";
import { Connections, type CheckedOut } from "../src/connections.js";
import { cleanUp, pgUrl } from "./support/stores.js";

afterAll(cleanUp);

it("a connection's error between the pool's hand-over and checkOut's listener is heard, not thrown: a new connection, and an idle one", async () => {
  const connections = new Connections({
    config: { connectionString: pgUrl() },
    onError: () => undefined,
    outageGraceMs: 0,
    outageClock: { now: () => 0, sleep: () => Promise.resolve() },
    checkOpen: () => undefined,
    isOpen: () => true,
    outagesObserved: () => false,
  });
  /** Checks a connection out with an error emitted in the gap; resolves to what the emit threw, if anything. */
  const raced = async (release: (checkedOut: CheckedOut) => void): Promise<unknown> => {
    let thrown: unknown;
    // The moment of the race: after the pool took its idle listener off, before checkOut's is on.
    connections.pool.once("acquire", (client: pg.PoolClient) =>
      queueMicrotask(() => {
        try {
          client.emit("error", new Error("terminating connection due to administrator command"));
        } catch (error) {
          thrown = error;
        }
      }),
    );
    release(await connections.checkOut());
    return thrown;
  };
  try {
    // A new connection, then kept idle (released without an error) and handed over again.
    expect(await raced((checkedOut) => checkedOut.release())).toBeUndefined();
    expect(connections.pool.idleCount).toBe(1);
    expect(await raced((checkedOut) => checkedOut.release(new Error("spoilt")))).toBeUndefined();
  } finally {
    await connections.pool.end();
  }
});
