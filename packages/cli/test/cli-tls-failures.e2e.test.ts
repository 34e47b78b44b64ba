/**
 * `--url https://…` when TLS fails for good: the message keeps Node's own text
 * and code (for a wrong host name, the name asked for and the certificate's
 * names) and says what to do, at once, without retrying. The servers here
 * only need to present a certificate (or speak plain HTTP): the handshake
 * fails before any request.
 */
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeTestCertificates, type TestCertificates } from "@golem-stream/test-support";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, run, scratchDir } from "./support/processes.js";

let certificates: TestCertificates;
const servers: Server[] = [];

beforeAll(() => {
  certificates = makeTestCertificates(scratchDir());
});
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

/** `server` listening on loopback: its `host:port`. */
async function listening(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

it("a certificate not for --url's host: Node's text naming both, and to use a name the certificate carries", async () => {
  const origin = `https://${await listening(createHttpsServer(certificates.issue("elsewhere", "DNS:elsewhere.test")))}`;
  const env = { GOLEM_STREAM_TOKEN: TOKEN, NODE_EXTRA_CA_CERTS: certificates.caFile };
  for (const command of [["types"], ["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"]]) {
    const result = await run([...command, "--url", origin], { env });
    expect(result.code, result.stderr).toBe(EXIT.connectionLost);
    expect(result.stderr).toBe(
      `golem-stream: cannot reach ${origin}: Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list; the certificate carries DNS:elsewhere.test (ERR_TLS_CERT_ALTNAME_INVALID): ` +
        "the server's certificate does not carry the host name of --url: use a name it carries\n",
    );
  }
});

it("an https:// URL of a plain HTTP server: the server may not speak TLS, use http://", async () => {
  const origin = `https://${await listening(createHttpServer((_request, response) => response.end()))}`;
  const result = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0", "--url", origin], {
    env: { GOLEM_STREAM_TOKEN: TOKEN },
  });
  expect(result.code, result.stderr).toBe(EXIT.connectionLost);
  expect(result.stderr).toBe(
    `golem-stream: cannot reach ${origin}: wrong version number (ERR_SSL_WRONG_VERSION_NUMBER): the server may not speak TLS: use http:// in --url\n`,
  );
});
