/**
 * The authenticator's result is bound into every token the server mints, and
 * a token has at most 8192 characters (decisions-v1 §4, §6). An identity too
 * long to fit is refused at the handshake (`forbidden`, 403), before any
 * session exists, instead of failing the first mint with `internal-error`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import WebSocket from "ws";
import { RawClient, TOKEN, demoStart, v } from "./helpers.js";
import { MemorySessionStore, createSessionServer, type Principal, type ServerLimits } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(caller: Principal, limits: Partial<ServerLimits> = {}): Promise<{ url: string; http: string; errors: unknown[] }> {
  const errors: unknown[] = [];
  const logger = {
    info: () => undefined,
    warn: () => undefined,
    error: (message: string, fields?: unknown) => void errors.push([message, fields]),
  };
  const server = createSessionServer({
    store: new MemorySessionStore(),
    host: createDemoHost(),
    keyring: Keyring.generate(),
    authenticator: (token) => (token === TOKEN ? caller : undefined),
    limits,
    logger,
  });
  servers.push(server);
  const address = await server.listen(0, "127.0.0.1");
  return { url: address.url, http: address.httpUrl, errors };
}

/** The upgrade's HTTP refusal, or "open" when the WebSocket was accepted. */
function handshake(url: string): Promise<{ status: number; body: string } | "open"> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url}/v1/agents/invoke-agent-session`, ["golem.agent-invocation.v1"], {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    socket.on("open", () => {
      socket.close();
      resolve("open");
    });
    socket.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    socket.on("error", () => undefined);
  });
}

describe("an authenticated identity too long for tokens", () => {
  it("is refused at the handshake with forbidden (403), and said in the operator's log without the identity", async () => {
    const { url, errors } = await serve({ account: "a", principal: "p".repeat(7000) });
    const refused = await handshake(url);
    expect(refused).toEqual({ status: 403, body: expect.any(String) });
    expect(JSON.parse((refused as { body: string }).body)).toEqual({
      code: "forbidden",
      error: "the authenticated identity is too long to be bound into tokens (account and principal at most 2048 UTF-8 bytes together)",
    });
    expect(errors).toContainEqual([
      "authenticator returned an identity longer than limits.maxCallerIdentityBytes",
      { event: "auth.invalid-identity", accountBytes: 1, principalBytes: 7000, limit: 2048 },
    ]);
    expect(JSON.stringify(errors)).not.toContain("ppp");
  });

  it("counts the account too, in UTF-8 bytes, against limits.maxCallerIdentityBytes", async () => {
    const { url } = await serve({ account: "é".repeat(30), principal: "p".repeat(41) }, { maxCallerIdentityBytes: 100 });
    expect(await handshake(url)).toMatchObject({ status: 403 });
    const fits = await serve({ account: "é".repeat(30), principal: "p".repeat(40) }, { maxCallerIdentityBytes: 100 });
    expect(await handshake(fits.url)).toBe("open");
  });

  it("at the default limit every token still fits: a session with a 2047-byte principal and a 1 KiB idempotency key starts and finishes", async () => {
    const { url } = await serve({ account: "a", principal: "p".repeat(2047) });
    const client = await RawClient.connect(url);
    client.send(demoStart("count", v.record(v.u32(3), v.u32(0)), { idempotencyKey: "k".repeat(1024) }));
    const accepted = await client.nextOf("invocationAccepted");
    const { messages } = await client.all();
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(accepted.sessionToken.length).toBeGreaterThan(2700);
  });

  it("a larger limit is clamped to 4243 bytes, where tokens still fit", async () => {
    const { url } = await serve({ account: "a", principal: "p".repeat(4242) }, { maxCallerIdentityBytes: 100_000 });
    const client = await RawClient.connect(url);
    client.send(demoStart("count", v.record(v.u32(2), v.u32(0)), { idempotencyKey: "k".repeat(1024) }));
    expect((await client.all()).messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    const over = await serve({ account: "a", principal: "p".repeat(4243) }, { maxCallerIdentityBytes: 100_000 });
    expect(await handshake(over.url)).toMatchObject({ status: 403 });
  });

  it("the discovery endpoint refuses it the same way", async () => {
    const { http } = await serve({ account: "a", principal: "p".repeat(7000) });
    const response = await fetch(`${http}/v1/agents/types?application=demo&environment=default`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([403, "forbidden"]);
  });

  it("a non-string or empty identity is the authenticator's bug: internal-error (500), said in the log", async () => {
    const { url, errors } = await serve({ account: "", principal: "p" });
    expect(await handshake(url)).toMatchObject({ status: 500 });
    expect(errors).toContainEqual([
      "authenticator returned an invalid identity",
      { event: "auth.invalid-identity", account: "string of 0 bytes", principal: "string of 1 bytes" },
    ]);
  });
});
