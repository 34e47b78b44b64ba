/**
 * Plain-JavaScript invocation through the server's catalogue, on loopback:
 * arguments converted with the method's schema, stream parameters given as
 * sources, results and items converted back with `js()`.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type Client, type OutputStream } from "../src/index.js";
import { collect, sha256 } from "./support/demo.js";
import { TOKEN, startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const echo = (name: string) => ({ application: "demo", environment: "default", agentType: "echo", constructorArgs: { name } });

describe("client.agent", () => {
  it("invokes with JavaScript arguments, stream parameters as sources", async () => {
    const agent = await client.agent(echo("typed"));
    expect([...agent.schema.methods.keys()].sort()).toEqual([
      "blobs",
      "count",
      "digest",
      "fail",
      "groups",
      "journal",
      "reverse",
      "split",
      "tally",
    ]);

    const reverse = agent.invoke("reverse", { input: ["abc", "héllo"] });
    const reversed = await reverse.result;
    if (reversed.kind !== "value") throw new Error("expected a value");
    expect(await collect((reversed.js() as OutputStream).js())).toEqual(["cba", "olléh"]);

    const bytes = new TextEncoder().encode("hello world\n".repeat(1000));
    const digest = agent.invoke("digest", { data: [bytes.subarray(0, 5000), bytes.subarray(5000)] });
    const result = await digest.result;
    expect(result.kind === "value" ? result.js() : undefined).toEqual({ bytes: BigInt(bytes.length), sha256: sha256(bytes) });
    await digest.finished;

    const count = agent.invoke("count", { to: 4, delayMs: 0 });
    const counted = await count.result;
    expect(await collect((counted.kind === "value" ? (counted.js() as OutputStream) : undefined)!.js())).toEqual([0, 1, 2, 3]);
  });

  it("refuses arguments that do not fit the schema before connecting", async () => {
    const agent = await client.agent(echo("typed"));
    expect(() => agent.invoke("count", { to: "four", delayMs: 0 })).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
    expect(() => agent.invoke("count", { to: 1 })).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
    expect(() => agent.invoke("nope", {})).toThrow(expect.objectContaining({ kind: "invalid-argument", code: "not-found" }));
    await expect(client.agent({ ...echo("x"), constructorArgs: { name: 5 } })).rejects.toMatchObject({ kind: "invalid-argument" });
  });

  it("reports catalogue errors with their public code", async () => {
    await expect(client.agent({ ...echo("x"), application: "nope" })).rejects.toMatchObject({ kind: "rejected", code: "not-found" });
    await expect(client.agent({ ...echo("x"), agentType: "nope" })).rejects.toMatchObject({ kind: "rejected", code: "not-found" });
    const stranger = createClient({ url: server.url, token: "wrong" });
    await expect(stranger.agent(echo("x"))).rejects.toMatchObject({ kind: "rejected", code: "unauthenticated" });
  });

  it.each([
    ["no Content-Length to refuse it by", false],
    ["a Content-Length past the bound, refused before the body is read", true],
  ])("stops downloading a catalogue past 8 MiB (%s) and reports limit-exceeded", async (_, declared) => {
    let sent = 0;
    let closed!: () => void;
    const responseClosed = new Promise<void>((resolve) => (closed = resolve));
    const hostile = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", ...(declared ? { "content-length": 64 * 1024 * 1024 } : {}) });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (!response.destroyed && sent < 64 * 1024 * 1024) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once("drain", pump);
        }
      };
      response.on("close", closed);
      pump();
    });
    await new Promise<void>((resolve) => hostile.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = hostile.address() as { port: number };
      const victim = createClient({ url: `ws://127.0.0.1:${port}`, token: TOKEN });
      const refused = victim.agent(echo("x"));
      await expect(refused).rejects.toMatchObject({ kind: "server-violation", code: "limit-exceeded" });
      await expect(refused).rejects.toThrow(` is larger than this client reads (maxCatalogueBytes, 8 MiB`);
      // Hung up at once, not when the unread response is collected (tens of seconds).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        responseClosed,
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("the client kept the response open")), 5000))),
      ]).finally(() => clearTimeout(timer));
      // The client hung up long before the 64 MiB the server would have sent.
      expect(sent).toBeLessThan(32 * 1024 * 1024);
    } finally {
      hostile.close();
    }
  });
});
