/**
 * A catalogue request answered with an HTTP error fails with `rejected`: the error envelope's
 * public code when the body is one, otherwise `internal-error` (retryable) for a 5xx and
 * `protocol-error` for anything else, as a refused handshake does. A body that is no envelope (a
 * gateway's HTML page) is no server violation. Only a successful response must be a catalogue.
 * A plain HTTP server on loopback plays the server, or the proxy in front of it.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient, type Client } from "../src/index.js";
import { TOKEN } from "./support/embedded.js";

/** What the next request is answered with. */
let answer = { status: 200, type: "application/json", body: "" };
let server: Server;
let client: Client;

beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(answer.status, { "content-type": answer.type });
    response.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  client = createClient({ url: `ws://127.0.0.1:${port}`, token: TOKEN });
});
afterAll(async () => new Promise((resolve) => server.close(resolve)));

async function agentFailure(): Promise<unknown> {
  return client.agent({ application: "demo", environment: "default", agentType: "echo", constructorArgs: { name: "x" } }).then(
    () => undefined,
    (failure: unknown) => failure,
  );
}

it.each([
  [502, "text/html", "<html><body>Bad Gateway</body></html>", "internal-error", true],
  [503, "text/plain", "", "internal-error", true],
  [404, "text/plain", "Not Found", "protocol-error", false],
  [500, "application/json", '{"status":"down"}', "internal-error", true],
])("HTTP %i (%s) without an error envelope: rejected, not a server violation", async (status, type, body, code, retryable) => {
  answer = { status, type, body };
  expect(await agentFailure()).toMatchObject({
    name: "ClientError",
    kind: "rejected",
    code,
    retryable,
    message: `discovery failed with HTTP ${status} (no error envelope in the response)`,
  });
});

it("an error envelope gives its public code and message", async () => {
  answer = { status: 503, type: "application/json", body: '{"code":"overloaded","error":"too many requests"}' };
  expect(await agentFailure()).toMatchObject({ kind: "rejected", code: "overloaded", message: "too many requests" });
});

it("a 400's envelope gives its code and its first message (errors: [message], decisions section 5)", async () => {
  answer = {
    status: 400,
    type: "application/json",
    body: '{"code":"validation-error","errors":["application and environment query parameters are required"]}',
  };
  expect(await agentFailure()).toMatchObject({
    kind: "rejected",
    code: "validation-error",
    message: "application and environment query parameters are required",
  });
});

it("a successful response that is no JSON is still a server violation", async () => {
  answer = { status: 200, type: "text/html", body: "<html></html>" };
  expect(await agentFailure()).toMatchObject({ kind: "server-violation", code: "invalid-message" });
});
