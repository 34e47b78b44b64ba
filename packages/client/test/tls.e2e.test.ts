/**
 * `wsTransport({ tls })` against the server's own TLS listener on loopback,
 * trusting a throwaway CA that Node's own certificate authorities do not
 * hold: both the catalogue request (`client.agent`) and the session's
 * `wss://` socket trust it; without it both are refused; PEM that cannot
 * be read is refused before any connection.
 */
import { makeTestCertificates, type TestCertificates } from "@golem-stream/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, wsTransport, type OutputStream } from "../src/index.js";
import { startServer, TOKEN, type TestServer } from "./support/embedded.js";

const echo = { application: "demo", environment: "default", agentType: "echo", constructorArgs: { name: "tls" } } as const;

let certificates: TestCertificates;
let server: TestServer;
beforeAll(async () => {
  certificates = makeTestCertificates();
  server = await startServer({ tls: certificates.issue("server") });
});
afterAll(async () => {
  await server.dispose();
  certificates.remove();
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("wsTransport({ tls })", () => {
  it("trusts its CA for the catalogue and for the session: a streaming call over wss:// with the CA given as PEM text", async () => {
    expect(server.url).toMatch(/^wss:\/\//);
    const client = createClient({ url: server.httpUrl, token: TOKEN, transport: wsTransport({ tls: { ca: certificates.ca } }) });
    const agent = await client.agent(echo);
    const call = agent.invoke("reverse", { input: ["abc", "héllo"] });
    const result = await call.result;
    expect(await collect((result.kind === "value" ? (result.js() as OutputStream) : undefined)!.js())).toEqual(["cba", "olléh"]);
    await call.finished;
  });

  it("takes the CA as bytes, and the name the certificate carries when the URL's host is not it", async () => {
    const url = server.httpUrl.replace("127.0.0.1", "localhost");
    const tls = { ca: [new TextEncoder().encode(certificates.ca)], servername: "localhost" };
    const client = createClient({ url, token: TOKEN, transport: wsTransport({ tls }) });
    const agent = await client.agent(echo);
    const call = agent.invoke("reverse", { input: ["xy"] });
    const result = await call.result;
    expect(await collect((result.kind === "value" ? (result.js() as OutputStream) : undefined)!.js())).toEqual(["yx"]);
    await call.finished;
  });

  it("without the CA the catalogue request is refused for the certificate, as the global fetch refuses it", async () => {
    const refusal = (transport?: ReturnType<typeof wsTransport>) =>
      createClient({ url: server.httpUrl, token: TOKEN, ...(transport === undefined ? {} : { transport }), reconnect: { maxAttempts: 1 } })
        .agent(echo)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
    const other = makeTestCertificates();
    try {
      for (const transport of [undefined, wsTransport({ tls: { ca: other.ca } })]) {
        expect(await refusal(transport)).toMatchObject({ kind: "connection-lost", message: expect.stringMatching(/certificate/) });
      }
    } finally {
      other.remove();
    }
  });

  it.each([
    [{ ca: "not PEM at all" }, /tls cannot be used/],
    [{ key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" }, /tls cannot be used/],
    [{ servername: 3 }, /tls\.servername must be a string/],
    ["ca.pem", /tls must be an object/],
  ])("refuses TLS settings it cannot use, before any connection: %j", (tls, message) => {
    expect(() => wsTransport({ tls } as Parameters<typeof wsTransport>[0])).toThrow(
      expect.objectContaining({ kind: "invalid-argument", message: expect.stringMatching(message) }),
    );
  });
});
