/**
 * `wsTransport` against a TLS server on loopback that requires a client
 * certificate (Node's `https` with `requestCert` and `rejectUnauthorized`,
 * as an mTLS proxy would be): without one, the call and the catalogue
 * request fail at once, not retried, saying to give one as
 * `wsTransport({ tls: { cert, key } })`, over TLS 1.3 (its alert "certificate
 * required") and TLS 1.2 (a handshake failure); with one the server accepts,
 * the request gets through.
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { SecureVersion } from "node:tls";
import { makeTestCertificates, type TestCertificates } from "@golem-stream/test-support";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ClientError, createClient, wsTransport } from "../src/index.js";

let certificates: TestCertificates;
const servers: Server[] = [];

beforeAll(() => {
  certificates = makeTestCertificates();
});

afterAll(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  certificates.remove();
});

/** A TLS server on loopback that requires a client certificate of the test's CA, answering every request 200: its https:// origin. */
async function mutualTlsServer(maxVersion: SecureVersion): Promise<string> {
  const server = createServer(
    { ...certificates.issue(`server-${maxVersion}`), ca: certificates.ca, requestCert: true, rejectUnauthorized: true, maxVersion },
    (_request, response) => response.end("{}"),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const HINT = /requires a client certificate|refused the TLS handshake, as one that requires a client certificate/;

it.each(["TLSv1.3", "TLSv1.2"] as const)(
  "%s: without a client certificate the call and the catalogue request fail at once, naming wsTransport({ tls: { cert, key } })",
  async (maxVersion) => {
    const origin = await mutualTlsServer(maxVersion);
    const transport = wsTransport({ tls: { ca: certificates.ca } });
    let connects = 0;
    const reconnecting: string[] = [];
    const call = createClient({
      url: origin,
      token: "test-token",
      transport: { connect: (request, handlers) => (connects++, transport.connect(request, handlers)) },
      reconnect: { maxAttempts: 2, initialDelayMs: 1 },
    }).invoke({
      application: "demo",
      environment: "default",
      agentType: "echo",
      constructorParameters: { kind: "record", value: { fields: [] } },
      method: "count",
      methodParameters: { kind: "record", value: { fields: [] } },
    });
    call.on("reconnecting", (event) => reconnecting.push(event.cause));
    call.result.catch(() => undefined);
    const error: unknown = await call.finished.then(
      () => expect.unreachable("the call succeeded"),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "connection-lost", retryable: false, message: expect.stringMatching(HINT) });
    expect((error as ClientError).message).toMatch(
      /^TLS with wss:\/\/127\.0\.0\.1:\d+ failed: .*wsTransport\(\{ tls: \{ cert, key \} \}\).*Not retried/,
    );
    expect({ connects, reconnecting }).toEqual({ connects: 1, reconnecting: [] });

    const catalogue = await transport.fetch!(`${origin}/v1/agents/types`, { headers: {} }).then(
      () => expect.unreachable("the request succeeded"),
      (e: unknown) => e,
    );
    expect(catalogue).toMatchObject({ kind: "connection-lost", message: expect.stringMatching(HINT) });
  },
);

it("with a client certificate the server accepts, the request gets through", async () => {
  const origin = await mutualTlsServer("TLSv1.3");
  const transport = wsTransport({ tls: { ca: certificates.ca, ...certificates.issue("client") } });
  const response = await transport.fetch!(`${origin}/v1/agents/types`, { headers: {} });
  expect(response.status).toBe(200);
});
