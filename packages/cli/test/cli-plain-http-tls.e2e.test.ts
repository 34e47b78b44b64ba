/**
 * An `http://` `--url` of `golem-stream serve --tls-cert --tls-key`, as real
 * processes: the server answers the plain request `400 protocol-error`, and
 * `invoke`, `types` and `resume` exit at once (connection lost, 4) saying the
 * port speaks TLS and to use https:// in --url, where `invoke` used to retry
 * a dropped connection for about 12 s; the `resume` it suggests has the
 * https:// URL, which continues the invocation.
 */
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, run, scratchDir, start, startServe, waitFor, type ServerProcess } from "./support/processes.js";
import { makeTestCertificates, type TestCertificates } from "@golem-stream/test-support";

let certificates: TestCertificates;
let server: ServerProcess;
let plainUrl: string;
let trusting: Record<string, string>;

beforeAll(async () => {
  certificates = makeTestCertificates(scratchDir());
  certificates.issue("served");
  const dataDir = join(scratchDir(), "state");
  const tls = ["--tls-cert", join(certificates.directory, "served.crt"), "--tls-key", join(certificates.directory, "served.key")];
  server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", ...tls], dataDir);
  plainUrl = server.url.replace(/^https:/, "http:");
  trusting = { GOLEM_STREAM_TOKEN: TOKEN, NODE_EXTRA_CA_CERTS: certificates.caFile };
});

afterAll(async () => {
  await server.stop();
});

const HINT = "the server speaks TLS on that port and refused a plain HTTP request (400 protocol-error): use https:// in --url";

it("invoke and types with an http:// --url of a TLS port exit at once with connection lost, saying to use https://", async () => {
  for (const args of [
    ["invoke", "--url", plainUrl, "echo", "count", "-c", '{"name":"x"}', "3", "0"],
    ["types", "--url", plainUrl],
  ]) {
    const started = Date.now();
    const failed = await run(args, { env: trusting });
    // No retry notice before it, and well under the ~12 s the retries of a dropped connection took.
    expect(failed.stderr).toBe(`golem-stream: cannot reach ${plainUrl}: ${HINT}\n`);
    expect(failed.code).toBe(EXIT.connectionLost);
    expect(Date.now() - started).toBeLessThan(5_000);
  }
});

it("resume with an http:// --url of a TLS port exits at once saying so, and the resume it suggests, over https://, continues", async () => {
  const checkpoint = join(scratchDir(), "run.ckpt");
  const invoked = start(["invoke", "--url", server.url, "echo", "count", "-c", '{"name":"x"}', "200", "10", "--checkpoint", checkpoint], {
    env: trusting,
  });
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 3, "3 items were printed");
  invoked.child.kill("SIGKILL");
  await invoked.done;

  const failed = await run(["resume", checkpoint, "--url", plainUrl], { env: trusting });
  expect(failed.code).toBe(EXIT.connectionLost);
  const suggested = `golem-stream resume ${checkpoint} --url ${server.url}`;
  expect(failed.stderr).toBe(
    `golem-stream: cannot reach the server: ${HINT}. The invocation may keep running on the server: \`${suggested}\` continues it\n`,
  );

  const resumed = await run(["resume", checkpoint, "--url", server.url], { env: trusting });
  expect(resumed.code, resumed.stderr).toBe(EXIT.success);
  expect(itemsOf(resumed.stdout, "$").at(-1)).toBe(199);
});
