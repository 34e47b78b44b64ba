/**
 * `resume` of an invocation that failed exits as the failure does (1), however often it is
 * resumed: the server sends the failed `invocationFinished` again on every attachment, and the
 * checkpoint keeps the session. (An output stream that ended with an error is another matter: a
 * cursor token does not say how its stream ended, see docs/protocol/cli.md, "Resume".)
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServeAgents } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

let server: ServerProcess;

beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/failing-method.js");
});
afterAll(async () => {
  await server?.stop();
});

describe("resume of a failed invocation", () => {
  it("exits 1 like the run that saw it fail, each time, with the failure on stderr", async () => {
    const checkpoint = join(scratchDir(), "failed.ckpt");
    const invoked = await run(["invoke", "crasher", "boom", "-a", "crash", "-c", "{}", "--checkpoint", checkpoint], { env: server.env });
    expect(invoked.code).toBe(EXIT.invocationFailed);
    expect(invoked.stderr).toMatch(/^golem-stream: the invocation failed on the server \(invocation-failed\)/);
    for (let again = 0; again < 2; again++) {
      const resumed = await run(["resume", checkpoint], { env: server.env });
      expect(resumed.code, resumed.stderr).toBe(EXIT.invocationFailed);
      expect(resumed.stderr).toMatch(/^golem-stream: the invocation failed on the server \(invocation-failed\)/);
      expect(resumed.stdout.length).toBe(0);
    }
  });
});
