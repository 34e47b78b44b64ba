/**
 * `wsTransport({ tls })` against the server's own TLS listener on loopback,
 * trusting a throwaway CA that Node's own certificate authorities do not
 * hold: both the catalogue request (`client.agent`) and the session's
 * `wss://` socket trust it; without it both are refused at once, never
 * retried, with Node's reason and what to do; an http:// URL of the TLS
 * port fails as soon as the server answers its plain request, saying to use
 * wss://; PEM that cannot be read is refused before any connection, naming
 * the member that holds it.
 */
import { makeTestCertificates, type TestCertificates } from "@golem-stream/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientError, createClient, wsTransport, type OutputStream, type Transport } from "../src/index.js";
import { tlsRefusal } from "../src/tls-refusal.js";
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
        expect(await refusal(transport)).toMatchObject({
          kind: "connection-lost",
          code: undefined,
          message: expect.stringMatching(
            /^TLS with https:\/\/127\.0\.0\.1:\d+ failed: unable to verify the first certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)\. .*wsTransport\(\{ tls: \{ ca \} \}\).*NODE_EXTRA_CA_CERTS=ca\.pem/,
          ),
        });
      }
    } finally {
      other.remove();
    }
  });

  it("a session socket whose certificate is refused fails the call at once, not through the reconnect policy", async () => {
    const other = makeTestCertificates();
    try {
      const cases = [
        // Node's CAs, which lack the test's.
        [{}, /unable to verify the first certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)\. .*NODE_EXTRA_CA_CERTS=ca\.pem/],
        [{ tls: { ca: other.ca } }, /\(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)\. .*wsTransport\(\{ tls: \{ ca \} \}\)/],
        // The right CA, a name the certificate does not carry: Node's text names both sides.
        [
          { tls: { ca: certificates.ca, servername: "elsewhere.test" } },
          /Host: elsewhere\.test\. is not in the cert's altnames: IP Address:127\.0\.0\.1, DNS:localhost \(ERR_TLS_CERT_ALTNAME_INVALID\)\. .*tls: \{ servername \}/,
        ],
      ] as const;
      for (const [options, message] of cases) {
        const failure = await refusedCall(server.url, wsTransport(options));
        expect(failure.error).toMatchObject({
          kind: "connection-lost",
          code: undefined,
          retryable: false,
          message: expect.stringMatching(message),
        });
        expect(failure.error.message).toMatch(/^TLS with wss:\/\/127\.0\.0\.1:\d+ failed: .*Not retried/);
        expect(failure).toMatchObject({ connects: 1, reconnecting: [] });
      }
    } finally {
      other.remove();
    }
  });

  it("an https:// URL of a server without TLS fails at once, catalogue and session alike, saying to try http://", async () => {
    const plain = await startServer();
    try {
      const url = plain.httpUrl.replace(/^http:/, "https:");
      const message =
        /^TLS with (https|wss):\/\/127\.0\.0\.1:\d+ failed: wrong version number \(ERR_SSL_WRONG_VERSION_NUMBER\)\. The server may not speak TLS: try http:\/\/ \(ws:\/\/\)/;
      const failure = await refusedCall(url, wsTransport());
      expect(failure).toMatchObject({
        connects: 1,
        reconnecting: [],
        error: { kind: "connection-lost", message: expect.stringMatching(message) },
      });
      for (const transport of [wsTransport(), wsTransport({ tls: { ca: certificates.ca } })]) {
        const error: unknown = await createClient({ url, token: TOKEN, transport })
          .agent(echo)
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(error).toMatchObject({ kind: "connection-lost", message: expect.stringMatching(message) });
      }
    } finally {
      await plain.dispose();
    }
  });

  it("an http:// URL of the TLS server fails at once, catalogue and session alike, saying the port speaks TLS and to use wss://", async () => {
    const url = server.httpUrl.replace(/^https:/, "http:");
    const message = (scheme: string) =>
      new RegExp(
        `^The server at 127\\.0\\.0\\.1:\\d+ speaks TLS on that port and refused this plain ${scheme}// request \\(400 protocol-error: .*\\)\\. ` +
          "Use wss://127\\.0\\.0\\.1:\\d+ \\(https://127\\.0\\.0\\.1:\\d+\\) instead\\. Not retried",
      );
    const failure = await refusedCall(url, wsTransport({ tls: { ca: certificates.ca } }));
    expect(failure).toMatchObject({
      connects: 1,
      reconnecting: [],
      error: { kind: "connection-lost", code: undefined, retryable: false, message: expect.stringMatching(message("ws:")) },
    });
    expect(failure.error.cause).toMatchObject({ code: "protocol-error" });
    for (const transport of [wsTransport(), wsTransport({ tls: { ca: certificates.ca } })]) {
      const error: unknown = await createClient({ url, token: TOKEN, transport })
        .agent(echo)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toMatchObject({ kind: "connection-lost", retryable: false, message: expect.stringMatching(message("http:")) });
    }
  });

  it("says each refusal with Node's text, the certificate's names where Node's text has none, and what to do; other errors are no refusal", () => {
    const nodeError = (message: string, code: string, extra: object = {}) => Object.assign(new Error(message), { code }, extra);
    const url = "wss://127.0.0.1:4433/v1/agents/invoke-agent-session";
    const ipOnly = nodeError(
      "Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list: ",
      "ERR_TLS_CERT_ALTNAME_INVALID",
      {
        cert: { subjectaltname: "DNS:elsewhere.test" },
      },
    );
    expect(tlsRefusal(ipOnly, url)?.message).toMatch(
      /^TLS with wss:\/\/127\.0\.0\.1:4433 failed: Hostname\/IP does not match certificate's altnames: IP: 127\.0\.0\.1 is not in the cert's list; the certificate carries DNS:elsewhere\.test \(ERR_TLS_CERT_ALTNAME_INVALID\)\. /,
    );
    expect(
      tlsRefusal(new TypeError("fetch failed", { cause: nodeError("certificate has expired", "CERT_HAS_EXPIRED") }), url),
    ).toMatchObject({
      kind: "connection-lost",
      message: expect.stringMatching(/: certificate has expired \(CERT_HAS_EXPIRED\)\. The server's certificate is not valid at this time/),
    });
    expect(tlsRefusal(nodeError("self-signed certificate", "DEPTH_ZERO_SELF_SIGNED_CERT"), url)?.message).toMatch(/trust it as its own CA/);
    expect(tlsRefusal(nodeError("connect ECONNREFUSED 127.0.0.1:4433", "ECONNREFUSED"), url)).toBeUndefined();
    expect(tlsRefusal(new Error("socket hang up"), url)).toBeUndefined();
  });

  it.each([
    [{ ca: "not PEM at all" }, /^wsTransport: tls\.ca holds no certificate \(PEM, "-----BEGIN CERTIFICATE-----"\): error:.*no start line$/],
    [
      { key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" },
      /^wsTransport: tls\.key is not a private key this process can read: /,
    ],
    [{ servername: 3 }, /tls\.servername must be a string/],
    ["ca.pem", /tls must be an object/],
  ])("refuses TLS settings it cannot use, before any connection: %j", (tls, message) => {
    expect(() => wsTransport({ tls } as Parameters<typeof wsTransport>[0])).toThrow(
      expect.objectContaining({ kind: "invalid-argument", message: expect.stringMatching(message) }),
    );
  });

  it("a private key given as ca is refused as tls.ca, one of several by its index", () => {
    const key = certificates.issue("misplaced").key;
    const refusal = (tls: Parameters<typeof wsTransport>[0]) => {
      try {
        wsTransport(tls);
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(refusal({ tls: { ca: key } })).toMatchObject({
      kind: "invalid-argument",
      message: expect.stringMatching(/^wsTransport: tls\.ca holds no certificate/),
    });
    expect(refusal({ tls: { ca: [certificates.ca, key] } })).toMatchObject({
      message: expect.stringMatching(
        /^wsTransport: tls\.ca\[1\] holds no certificate \(PEM, "-----BEGIN CERTIFICATE-----"\): error:0480006C:PEM routines::no start line$/,
      ),
    });
    expect(refusal({ tls: { ca: certificates.ca, cert: [key] } })).toMatchObject({
      message: expect.stringMatching(/^wsTransport: tls\.cert\[0\] holds no certificate/),
    });
  });
});

/**
 * A call by its native values (no catalogue request) with `transport`, which must fail: its error,
 * the transport's connection attempts and the `reconnecting` events it had.
 */
async function refusedCall(url: string, transport: Transport): Promise<{ error: ClientError; connects: number; reconnecting: string[] }> {
  let connects = 0;
  const counting: Transport = { connect: (request, handlers) => (connects++, transport.connect(request, handlers)) };
  const reconnecting: string[] = [];
  const call = createClient({ url, token: TOKEN, transport: counting, reconnect: { maxAttempts: 2, initialDelayMs: 1 } }).invoke({
    application: echo.application,
    environment: echo.environment,
    agentType: echo.agentType,
    constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "tls" }] } },
    method: "count",
    methodParameters: { kind: "record", value: { fields: [] } },
  });
  call.on("reconnecting", (event) => reconnecting.push(event.cause));
  call.result.catch(() => undefined);
  const error = await call.finished.then(
    () => expect.unreachable("the call succeeded"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ClientError);
  return { error: error as ClientError, connects, reconnecting };
}
