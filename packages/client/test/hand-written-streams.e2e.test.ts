/**
 * Stream values written by hand are refused before anything is sent (`invalid-argument`, as
 * every unusable argument of `invoke`): constructor parameters with a stream (protocol 4.1:
 * "Constructor parameters MUST NOT contain streams"), and a method parameter's stream node that
 * is a stream token, or both forms at once (3.2: "Before acceptance, an input stream is a
 * provisional reference ... The two forms are mutually exclusive"), or a provisional reference
 * with no source of this process behind it. They were sent, and the server refused them, or
 * (the last) accepted a start whose input no process could feed. Against a scripted server on
 * loopback, which must see no connection at all; and an input item holding such a node fails its
 * input as any item that is no value of it does.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SchemaValueJson } from "@golem-stream/wire";
import { ClientError, createClient, inputStream } from "../src/index.js";
import { echo } from "./support/fixtures.js";
import { startFakeServer, type FakeServer } from "./support/fake-session-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const REF = "0dff1c71-f12f-4bb1-996c-23d693bdc825";
const stream = (value: Record<string, string>) => ({ kind: "stream", value }) as unknown as SchemaValueJson;
const fields = (...nodes: unknown[]) => ({ kind: "record", value: { fields: nodes } }) as unknown as SchemaValueJson;

async function refusal(invoke: (client: ReturnType<typeof createClient>) => unknown): Promise<unknown> {
  server = await startFakeServer(() => undefined);
  const client = createClient({ url: server.url, token: "t", reconnect: { maxAttempts: 0 } });
  try {
    invoke(client);
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("stream values written by hand are refused before anything is sent", () => {
  it.each<[string, string | undefined, SchemaValueJson, SchemaValueJson]>([
    ["constructor parameters holding a provisional reference", "validation-error", fields(stream({ provisionalRef: REF })), fields()],
    ["constructor parameters holding an input stream source", "validation-error", fields(inputStream.strings(["a"])), fields()],
    [
      "a method parameter given as a stream token",
      "validation-error",
      echo.constructorParameters,
      fields(stream({ streamToken: "gai1_other" })),
    ],
    [
      "a method parameter given in both forms",
      "validation-error",
      echo.constructorParameters,
      fields(stream({ provisionalRef: REF, streamToken: "gai1_other" })),
    ],
    [
      "a method parameter given as a provisional reference without a source",
      undefined,
      echo.constructorParameters,
      fields(stream({ provisionalRef: REF })),
    ],
  ])("%s: invalid-argument, code %s", async (_, code, constructorParameters, methodParameters) => {
    const error = await refusal((client) => client.invoke({ ...echo, constructorParameters, method: "reverse", methodParameters }));
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "invalid-argument", code });
    expect((error as Error).message).toMatch(/stream/);
    expect(server!.peers).toHaveLength(0);
  });

  it("an input item holding a stream token fails its input, and is not sent", async () => {
    let next!: (type: string) => void;
    const firstAfterAcceptance = new Promise<string>((resolve) => (next = resolve));
    server = await startFakeServer(async (peer) => {
      const start = await peer.next();
      if (start.type !== "invocationStart") throw new Error(`expected a start, got ${start.type}`);
      const provisionalRef = /"provisionalRef":"([0-9a-f-]{36})"/.exec(JSON.stringify(start.methodParameters))![1]!;
      peer.send({
        type: "invocationAccepted",
        attemptId: start.attemptId,
        idempotencyKey: start.idempotencyKey,
        mappings: [
          { channel: 1, direction: "input", streamToken: "in", provisionalRef, inputHighWater: { sequence: 0n, terminal: false } },
        ],
        sessionToken: "s",
      });
      next((await peer.next()).type);
    });
    const call = createClient({ url: server.url, token: "t", reconnect: { maxAttempts: 0 } }).invoke({
      ...echo,
      method: "groups",
      methodParameters: fields(inputStream.values([fields(stream({ streamToken: "gai1_other" }))])),
    });
    call.finished.catch(() => undefined);
    const failures: unknown[] = [];
    call.on("inputFailed", ({ error }) => failures.push(error));
    // The input's cancel (source-unavailable) is the first thing after the acceptance: no item.
    expect(await firstAfterAcceptance).toBe("streamCancel");
    expect(failures).toMatchObject([{ kind: "invalid-argument", code: "validation-error" }]);
    call.detach();
  });
});
