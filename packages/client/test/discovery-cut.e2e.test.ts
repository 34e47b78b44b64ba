/**
 * A catalogue download the server cuts short, on loopback: the response's head and part of its
 * body arrive, then the connection is destroyed. The call fails with `connection-lost` naming the
 * endpoint, as a request that cannot reach it does, and the cause is what `fetch` reported.
 */
import { createServer } from "node:http";
import { echoContract } from "@golem-stream/contract/demo";
import { expect, it } from "vitest";
import { createClient } from "../src/index.js";
import { TOKEN } from "./support/embedded.js";

it.each([
  ["client.agent", "agent"],
  ["client.connect", "connect"],
] as const)("%s: a catalogue cut short fails with connection-lost naming the endpoint", async (_, call) => {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "application/json" });
    response.write('{"agentTypes":[', () => setTimeout(() => response.socket?.destroy(), 20));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as { port: number };
    const client = createClient({ url: `ws://127.0.0.1:${port}`, token: TOKEN });
    const where = { application: "demo", environment: "default" } as const;
    const refused =
      call === "agent"
        ? client.agent({ ...where, agentType: "echo", constructorArgs: { name: "cut" } })
        : client.connect(echoContract, { ...where, constructor: { name: "cut" } });
    const error: unknown = await refused.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toMatchObject({ name: "ClientError", kind: "connection-lost", code: undefined });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^the connection to the discovery endpoint http://127\\.0\\.0\\.1:${port}/v1/agents/types\\?application=demo&environment=default was lost while reading the catalogue: `,
      ),
    );
    expect((error as Error).cause).toBeInstanceOf(Error);
  } finally {
    server.close();
  }
});
