/**
 * Static-token principals (`startEmbeddedServer`, `serve`): named by an
 * HMAC of the token under the data directory's principal secret, never a
 * bare hash a reader of a session token could test guesses against; the
 * same secret names a token the same on every node; a session started
 * under the earlier names (account `local`, the bare SHA-256 prefix) stays
 * resumable. Each token is its own account, so one holder cannot claim
 * another's idempotency keys, unless the tokens are grouped into one.
 */
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Keyring, sha256Hex, verifyToken } from "@golem-stream/tokens";
import {
  createSessionServer,
  loadOrCreateKeyring,
  PRINCIPAL_SECRET_FILE,
  SqliteSessionStore,
  startEmbeddedServer,
  type EmbeddedServer,
  type StaticToken,
} from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { demoStart, RawClient, v, resumeAttach } from "./helpers.js";

const TOKEN = "a-static-token-for-principals";
const dirs: string[] = [];
const servers: EmbeddedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-principals-"));
  dirs.push(dir);
  return dir;
}

async function embedded(dir: string, principalSecret?: Uint8Array, tokens: readonly StaticToken[] = [TOKEN]): Promise<EmbeddedServer> {
  const server = await startEmbeddedServer({
    dataDir: dir,
    tokens,
    synchronous: "normal",
    ...(principalSecret === undefined ? {} : { principalSecret }),
  });
  servers.push(server);
  return server;
}

/** Runs a short `count` to its end; its acceptance's session token. */
async function finishedSession(url: string): Promise<string> {
  const client = await RawClient.connect(url, TOKEN);
  client.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
  const { messages } = await client.all();
  const accepted = messages.find((m) => m.type === "invocationAccepted");
  if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
  return accepted.sessionToken;
}

const principalIn = (sessionToken: string, dir: string) => verifyToken(sessionToken, "session", loadOrCreateKeyring(dir)).fields.principal;
const accountIn = (sessionToken: string, dir: string) => verifyToken(sessionToken, "session", loadOrCreateKeyring(dir)).fields.account;

/** Starts a long `count` with `idempotencyKey` as `token`; its first answer. */
async function startWithKey(url: string, token: string, idempotencyKey: string) {
  const client = await RawClient.connect(url, token);
  client.send(demoStart("count", v.record(v.u32(1_000_000), v.u32(1000)), { idempotencyKey }));
  const first = await client.next();
  client.socket.close();
  return first;
}

describe("static-token principals", () => {
  it("are an HMAC of the token under <dataDir>/principal-secret (created 0600), not its bare SHA-256", async () => {
    const dir = dataDir();
    const server = await embedded(dir);
    const secretPath = join(dir, PRINCIPAL_SECRET_FILE);
    expect(statSync(secretPath).mode & 0o777).toBe(0o600);
    const secret = readFileSync(secretPath);
    expect(secret.length).toBe(32);
    const principal = principalIn(await finishedSession(server.url), dir);
    expect(principal).toBe(`token-${createHmac("sha256", secret).update(TOKEN).digest("hex").slice(0, 16)}`);
    expect(principal).not.toBe(`token-${sha256Hex(TOKEN).slice(0, 16)}`);
  });

  it("the same principalSecret names a token the same on every node; another secret differently; a short one is refused", async () => {
    const secret = new Uint8Array(32).fill(7);
    const [a, b, c] = [dataDir(), dataDir(), dataDir()];
    const first = principalIn(await finishedSession((await embedded(a, secret)).url), a);
    const second = principalIn(await finishedSession((await embedded(b, secret)).url), b);
    const other = principalIn(await finishedSession((await embedded(c)).url), c);
    expect(second).toBe(first);
    expect(other).not.toBe(first);
    await expect(startEmbeddedServer({ dataDir: dataDir(), tokens: [TOKEN], principalSecret: new Uint8Array(15) })).rejects.toThrow(
      /at least 16 bytes/,
    );
  });

  it("a session started under the earlier name (the bare SHA-256 prefix) stays resumable", async () => {
    const dir = dataDir();
    // What an earlier release served: the same data directory, the token named by its bare hash.
    const store = new SqliteSessionStore({ dataDir: dir, synchronous: "normal" });
    const legacy = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: loadOrCreateKeyring(dir),
      authenticator: (token) => (token === TOKEN ? { account: "local", principal: `token-${sha256Hex(TOKEN).slice(0, 16)}` } : undefined),
    });
    const sessionToken = await finishedSession((await legacy.listen()).url);
    await legacy.close();
    await store.close();

    const server = await embedded(dir);
    const client = await RawClient.connect(server.url, TOKEN);
    client.send(resumeAttach("resume", sessionToken));
    const { messages } = await client.all();
    expect(messages[0]).toMatchObject({ type: "invocationAccepted" });
    expect(messages.filter((m) => m.type === "outputStreamItem")).toHaveLength(3);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a session started under account local and the keyed name (the release before accounts per token) stays resumable", async () => {
    const dir = dataDir();
    const secret = new Uint8Array(32).fill(3);
    const store = new SqliteSessionStore({ dataDir: dir, synchronous: "normal" });
    const keyedName = `token-${createHmac("sha256", secret).update(TOKEN).digest("hex").slice(0, 16)}`;
    const legacy = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: loadOrCreateKeyring(dir),
      authenticator: (token) => (token === TOKEN ? { account: "local", principal: keyedName } : undefined),
    });
    const sessionToken = await finishedSession((await legacy.listen()).url);
    await legacy.close();
    await store.close();

    const server = await embedded(dir, secret);
    const client = await RawClient.connect(server.url, TOKEN);
    client.send(resumeAttach("resume", sessionToken));
    const { messages } = await client.all();
    const accepted = messages[0];
    expect(accepted).toMatchObject({ type: "invocationAccepted" });
    // The refreshed token keeps the session's names.
    if (accepted?.type === "invocationAccepted") expect(accountIn(accepted.sessionToken, dir)).toBe("local");
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    // A new session is in the token's own account.
    expect(accountIn(await finishedSession(server.url), dir)).toBe(keyedName);
  });
});

describe("formerPrincipals and formerAccounts from an authenticator", () => {
  it.each(["formerPrincipals", "formerAccounts"])("%s must be an array of non-empty strings (internal-error otherwise)", async (member) => {
    const store = new SqliteSessionStore({ dataDir: dataDir(), synchronous: "normal" });
    const server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate("k1"),
      authenticator: () => ({ account: "a", principal: "p", [member]: "p-old" as never }),
    });
    const url = (await server.listen()).url;
    try {
      await expect(RawClient.connect(url, "any")).rejects.toThrow(/500/);
    } finally {
      await server.close();
      await store.close();
    }
  });
});

describe("static-token accounts", () => {
  const OTHER = "another-static-token";

  it("each token is its own account: another token's idempotency key never collides with it", async () => {
    const dir = dataDir();
    const server = await embedded(dir, undefined, [TOKEN, OTHER]);
    const mine = await startWithKey(server.url, TOKEN, "upload-42");
    const theirs = await startWithKey(server.url, OTHER, "upload-42");
    expect(mine).toMatchObject({ type: "invocationAccepted" });
    expect(theirs).toMatchObject({ type: "invocationAccepted" });
    if (mine.type !== "invocationAccepted" || theirs.type !== "invocationAccepted") return;
    expect(accountIn(mine.sessionToken, dir)).toBe(principalIn(mine.sessionToken, dir));
    expect(accountIn(theirs.sessionToken, dir)).not.toBe(accountIn(mine.sessionToken, dir));
    // Within one account the key is bound: the same token's second start with it is refused.
    expect(await startWithKey(server.url, TOKEN, "upload-42")).toMatchObject({ type: "invocationRejected", code: "idempotency-conflict" });
  });

  it("tokens grouped into one account share it, and its idempotency keys; a token outside the group does not", async () => {
    const dir = dataDir();
    const server = await embedded(dir, undefined, [
      { token: TOKEN, account: "team-a" },
      { token: OTHER, account: "team-a" },
      "a-lone-static-token",
    ]);
    const mine = await startWithKey(server.url, TOKEN, "upload-7");
    expect(mine).toMatchObject({ type: "invocationAccepted" });
    if (mine.type === "invocationAccepted") expect(accountIn(mine.sessionToken, dir)).toBe("team-a");
    expect(await startWithKey(server.url, OTHER, "upload-7")).toMatchObject({ type: "invocationRejected", code: "idempotency-conflict" });
    expect(await startWithKey(server.url, "a-lone-static-token", "upload-7")).toMatchObject({ type: "invocationAccepted" });
  });

  it("refuses an account name of the single tokens' form, an invalid one, and a token given in two accounts", async () => {
    for (const tokens of [
      [{ token: TOKEN, account: "token-0123456789abcdef" }],
      [{ token: TOKEN, account: "has space" }],
      [{ token: TOKEN, account: "" }],
      [
        { token: TOKEN, account: "a" },
        { token: TOKEN, account: "b" },
      ],
      [TOKEN, { token: TOKEN, account: "a" }],
    ]) {
      await expect(startEmbeddedServer({ dataDir: dataDir(), tokens }), JSON.stringify(tokens)).rejects.toThrow(/options\.tokens: /);
    }
  });
});
