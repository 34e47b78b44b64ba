/**
 * The `signal` of `client.agent` and `client.connect` aborts their catalogue download, on loopback:
 * a server that holds the request unanswered, or its body half sent, and the caller aborts. The
 * call fails with `aborted` (its cause the signal's reason), as every aborted operation of the
 * client does, not with `connection-lost`, and the client hangs up. Once the agent is returned
 * the signal is done with: aborting it then cancels none of the agent's calls.
 */
import { createServer, type ServerResponse } from "node:http";
import { echoContract } from "@golem-stream/contract/demo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type OutputStream } from "../src/index.js";
import { collect } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

const echo = { application: "demo", environment: "default", agentType: "echo", constructorArgs: { name: "abort" } } as const;

/** A discovery endpoint that answers nothing, or only the head and a first chunk of the body, until closed. */
async function holdingServer(sendHead: boolean) {
  let request!: () => void;
  const requested = new Promise<void>((resolve) => (request = resolve));
  let closed!: () => void;
  const responseClosed = new Promise<void>((resolve) => (closed = resolve));
  const held: ServerResponse[] = [];
  const server = createServer((_request, response) => {
    held.push(response);
    response.on("close", closed);
    if (sendHead) {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"agentTypes":[');
    }
    request();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}`,
    requested,
    responseClosed,
    close: () => {
      for (const response of held) response.destroy();
      server.close();
    },
  };
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

describe("aborting the catalogue download", () => {
  it.each([
    ["client.agent, before the server answers", "agent", false],
    ["client.agent, with the body half sent", "agent", true],
    ["client.connect, before the server answers", "connect", false],
    ["client.connect, with the body half sent", "connect", true],
  ] as const)("%s: fails with aborted, its cause the signal's reason, and hangs up", async (_, call, sendHead) => {
    const server = await holdingServer(sendHead);
    try {
      const client = createClient({ url: server.url, token: TOKEN });
      const controller = new AbortController();
      const refused =
        call === "agent"
          ? client.agent({ ...echo, signal: controller.signal })
          : client.connect(echoContract, {
              application: "demo",
              environment: "default",
              constructor: { name: "abort" },
              signal: controller.signal,
            });
      refused.catch(() => undefined);
      await server.requested;
      const reason = new Error("the user went away");
      controller.abort(reason);
      const error: unknown = await within(
        refused.then(
          () => undefined,
          (failure: unknown) => failure,
        ),
        5000,
        "the call did not settle",
      );
      expect(error).toMatchObject({
        name: "ClientError",
        kind: "aborted",
        code: undefined,
        message: `the agent catalogue request (application "demo", environment "default") was aborted by the caller's signal`,
        cause: reason,
      });
      await within(server.responseClosed, 5000, "the client kept the response open");
    } finally {
      server.close();
    }
  });

  it("an already aborted signal fails with aborted", async () => {
    const server = await holdingServer(false);
    try {
      const client = createClient({ url: server.url, token: TOKEN });
      await expect(client.agent({ ...echo, signal: AbortSignal.abort() })).rejects.toMatchObject({ kind: "aborted" });
    } finally {
      server.close();
    }
  });
});

describe("after the agent is returned", () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.dispose());

  it("aborting the signal given to client.agent cancels none of the agent's calls", async () => {
    const client = createClient({ url: server.url, token: TOKEN });
    const controller = new AbortController();
    const agent = await client.agent({ ...echo, signal: controller.signal });
    const call = agent.invoke("reverse", { input: ["abc"] });
    controller.abort();
    const result = await call.result;
    expect(await collect((result.kind === "value" ? (result.js() as OutputStream) : undefined)!.js())).toEqual(["cba"]);
    await call.finished;
  });
});
