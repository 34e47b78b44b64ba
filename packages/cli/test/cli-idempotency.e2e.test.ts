/**
 * `--idempotency-key`: a key makes a start happen once. Running the same command again is a new
 * start (a new attempt id) and is refused `idempotency-conflict` (docs/protocol/server.md,
 * "Idempotency key scope"); the message says what to do instead, and that a checkpoint written
 * for the refused start holds nothing to continue. Keys are scoped by account:
 * each static token is its own, unless the token file groups tokens into one.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, startServe, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

it("the same command with the same key twice: the second is refused, and told to use another key", async () => {
  const s = await startServer(join(scratchDir(), "data"));
  servers.push(s);
  const args = ["invoke", "echo", "count", "-c", '{"name":"once"}', "3", "0", "--idempotency-key", "k1"];
  const first = await run(args, { env: s.env });
  expect(first.code, first.stderr).toBe(EXIT.success);
  expect(itemsOf(first.stdout, "$")).toEqual([0, 1, 2]);
  const second = await run(args, { env: s.env });
  expect(second.code).toBe(EXIT.rejected);
  // No checkpoint here: resume is offered only for the other invocation's own file, if it has one.
  expect(second.stderr).toBe(
    "golem-stream: rejected (idempotency-conflict): the idempotency key is already bound to another invocation of this agent (a key makes a start happen once), so this start was refused and ran nothing: " +
      "start it again with another --idempotency-key; if that invocation was run with --checkpoint, `golem-stream resume` of its file continues it\n",
  );
});

it("a checkpoint of a start refused for its key holds nothing to continue: invoke and resume both say to delete it", async () => {
  const s = await startServer(join(scratchDir(), "data"));
  servers.push(s);
  const args = ["invoke", "echo", "count", "-c", '{"name":"once"}', "1", "0", "--idempotency-key", "k2"];
  const first = await run(args, { env: s.env });
  expect(first.code, first.stderr).toBe(EXIT.success);
  const checkpoint = join(scratchDir(), "refused.ckpt");
  const advice =
    "golem-stream: rejected (idempotency-conflict): the idempotency key is already bound to another invocation of this agent (a key makes a start happen once), so this start was refused and ran nothing. " +
    `${checkpoint} holds only this refused start, which \`golem-stream resume ${checkpoint} --url ${s.url}\` would send again and have refused the same way: ` +
    `delete ${checkpoint}, and start the invocation again with another --idempotency-key\n`;
  const second = await run([...args, "--checkpoint", checkpoint], { env: s.env });
  expect(second.code).toBe(EXIT.rejected);
  expect(second.stderr).toBe(advice);
  expect(existsSync(checkpoint)).toBe(true);
  const resumed = await run(["resume", checkpoint], { env: s.env });
  expect(resumed.code).toBe(EXIT.rejected);
  expect(resumed.stderr).toBe(advice);
});

it("each token of a token file is its own account, so keys never collide across tokens; tokens grouped in the file share theirs", async () => {
  const dir = scratchDir();
  const file = join(dir, "tokens.txt");
  writeFileSync(
    file,
    "# team-a shares one account\nteam-a: grouped-token-one-0123\nteam-a: grouped-token-two-0123\nalone-token-0123456789\n",
    { mode: 0o600 },
  );
  const s = await startServe(["--port", "0", "--token-file", file, "--data-dir", join(dir, "data"), "--log-level", "warn"], dir);
  servers.push(s);
  const invoke = (token: string) =>
    run(["invoke", "echo", "count", "-c", '{"name":"once"}', "1", "0", "--idempotency-key", "shared-key"], {
      env: { ...s.env, GOLEM_STREAM_TOKEN: token },
    });
  const first = await invoke("grouped-token-one-0123");
  expect(first.code, first.stderr).toBe(EXIT.success);
  // The other token of the group is in the same account: the key is bound there.
  const grouped = await invoke("grouped-token-two-0123");
  expect(grouped.code).toBe(EXIT.rejected);
  expect(grouped.stderr).toMatch(/idempotency-conflict/);
  // A token alone is its own account: the same key is free there.
  const alone = await invoke("alone-token-0123456789");
  expect(alone.code, alone.stderr).toBe(EXIT.success);
});

it.each([
  ["empty", "", 0],
  ["over 1 KiB", "é".repeat(513), 1026],
])("an %s key is a usage error that names --idempotency-key, and nothing is sent", async (_, key, bytes) => {
  const s = await startServer(join(scratchDir(), "data"));
  servers.push(s);
  const done = await run(["invoke", "echo", "count", "-c", '{"name":"once"}', "1", "0", "--idempotency-key", key], { env: s.env });
  expect(done.code).toBe(EXIT.usage);
  expect(done.stderr).toMatch(new RegExp(`--idempotency-key .*1 to 1024 bytes of UTF-8, this one is ${bytes}`));
  expect(done.stderr).not.toMatch(/idempotencyKey/);
});
