/**
 * The server's `SessionStore` contract suite and its model check
 * (`@golem-stream/server/testing`), run against PostgresSessionStore.
 */
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { checkAgainstModel, storeContract } from "@golem-stream/server/testing";
import { cleanUp, connect, freshSchema } from "./support/stores.js";

afterAll(cleanUp);

// A fresh schema per case: the contract's sessions share one idempotency key.
storeContract({ describe, it, expect }, "PostgresSessionStore", () => connect());

it("reads back the same as the in-memory model after any writes and reopenings", async () => {
  const schema = freshSchema();
  await checkAgainstModel({
    fc,
    expect,
    open: () => connect({ schema }),
    reopen: async (store) => {
      await store.close();
      return connect({ schema });
    },
    numRuns: 30,
  });
});
