/**
 * `--idempotency-key`: a key makes a start happen once. Running the same command again is a new
 * start (a new attempt id) and is refused `idempotency-conflict` (docs/protocol/server.md,
 * "Idempotency key scope"); the message says what to do instead.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

it("the same command with the same key twice: the second is refused, and told to resume or use another key", async () => {
  const s = await startServer(join(scratchDir(), "data"));
  servers.push(s);
  const args = ["invoke", "echo", "count", "-c", '{"name":"once"}', "3", "0", "--idempotency-key", "k1"];
  const first = await run(args, { env: s.env });
  expect(first.code, first.stderr).toBe(EXIT.success);
  expect(itemsOf(first.stdout, "$")).toEqual([0, 1, 2]);
  const second = await run(args, { env: s.env });
  expect(second.code).toBe(EXIT.rejected);
  expect(second.stderr).toMatch(/^golem-stream: rejected \(idempotency-conflict\): the idempotency key is already bound to an invocation of this agent; a new start with it is refused even when identical .*: continue that invocation from its saved state with a takeover \(client\.takeover, golem-stream resume\), or use another key\n$/);
});
