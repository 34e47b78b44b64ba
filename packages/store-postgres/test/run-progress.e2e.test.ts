/**
 * The run counts of replayable invocations with their progress
 * (`session_runs.progress`, `stalled`: `SessionStore.recordRun`), columns
 * added without a schema version: a database made before them gets them when
 * a node opens it, a node of the version before still writes its counts, and
 * a role that cannot add them counts every re-run as one without progress.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { session, startAttempt } from "@golem-stream/server/testing";
import { asRoleNotOwning, cleanUp, connect, freshSchema, withAdmin } from "./support/stores.js";
import { statements } from "../src/statements.js";

afterAll(cleanUp);

it("a database whose run counts have no progress columns gets them at open and keeps its schema version; the count goes on, and a node of the version before still writes it", async () => {
  const schema = freshSchema();
  const first = await connect({ schema });
  const s = session();
  await first.createSession(s, [], startAttempt(s));
  expect(await first.recordRun(s.sessionId, undefined, 4n)).toEqual({ run: 2, withoutProgress: 0 });
  await first.close();
  const versions = () =>
    withAdmin(
      async (client) => (await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`)).rows,
    );
  const before = await versions();
  await withAdmin((client) => client.query(`ALTER TABLE ${schema}.session_runs DROP COLUMN progress, DROP COLUMN stalled`));

  const again = await connect({ schema });
  // The row has no progress recorded: a re-run that finds any starts a new count.
  expect(await again.recordRun(s.sessionId, undefined, 4n)).toEqual({ run: 3, withoutProgress: 0 });
  expect(await again.recordRun(s.sessionId, undefined, 4n)).toEqual({ run: 4, withoutProgress: 1 });
  expect(await versions()).toEqual(before);
  // What a node of the version before runs.
  await withAdmin((client) => client.query(statements(schema).recordRun, [s.sessionId, null]));
  expect(await again.recordRun(s.sessionId, undefined, 4n)).toEqual({ run: 6, withoutProgress: 2 });
  await again.close();
});

it("a node whose role cannot add the progress columns opens the store and counts every re-run as one without progress, a drain's hand-over too", async () => {
  const schema = freshSchema();
  const owner = await connect({ schema });
  await owner.close();
  await withAdmin((client) => client.query(`ALTER TABLE ${schema}.session_runs DROP COLUMN progress, DROP COLUMN stalled`));
  await asRoleNotOwning(schema, async (connectionString) => {
    const node = await connect({ schema, connectionString });
    const s = session();
    await node.createSession(s, [], startAttempt(s));
    expect(await node.recordRun(s.sessionId, undefined, 4n)).toEqual({ run: 2, withoutProgress: 1 });
    expect(await node.recordRun(s.sessionId, undefined, 9n)).toEqual({ run: 3, withoutProgress: 2 });
    // Nowhere to mark a drain's hand-over: it resolves, and the next re-run counts as any other;
    // one the mark would refuse (no such session running) is refused all the same.
    await node.recordHandOver(s.sessionId);
    expect(await node.recordRun(s.sessionId, undefined, 9n)).toEqual({ run: 4, withoutProgress: 3 });
    await expect(node.recordHandOver(randomUUID())).rejects.toThrow("the session is not running");
    await node.close();
  });
});
