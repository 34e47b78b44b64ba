/**
 * `createJwtAuth` on a real server over loopback sockets: which bearer JWTs
 * open a session (and which are refused 401 `unauthenticated` at the
 * handshake), key rotation through a JWKS served over HTTP or read from a
 * file, the claims that become the caller, authorization by a claim
 * (`forbidden`), and that no token or claim value reaches a log.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JWK, JWTPayload } from "jose";
import { inspectToken, Keyring } from "@golem-stream/tokens";
import {
  DISCOVERY_PATH,
  MemorySessionStore,
  createJwtAuth,
  createSessionServer,
  startEmbeddedServer,
  type JwtAuthOptions,
} from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { RawClient, demoStart, v, resumeAttach } from "./helpers.js";
import {
  AUDIENCE,
  CLAIM_MARKER,
  ISSUER,
  JwksServer,
  SUBJECT,
  UNAUTHENTICATED,
  handshake,
  hmacWithPublicKey,
  recordingLogger,
  sign,
  signingKey,
  unsecured,
  type SigningKey,
} from "./support/jwt-fixtures.js";

const logger = recordingLogger();
/** Every token given to a server in this file: none may appear in a log. */
const issued: string[] = [];
const closers: (() => Promise<void>)[] = [];
let rsa: SigningKey, rotated: SigningKey, ec: SigningKey, ed: SigningKey, stranger: SigningKey;
let jwks: JwksServer;
let dir: string;

beforeAll(async () => {
  [rsa, rotated, ec, ed, stranger] = await Promise.all([
    signingKey("rsa-1", "RS256"),
    signingKey("rsa-2", "RS256"),
    signingKey("ec-1", "ES256"),
    signingKey("ed-1", "EdDSA"),
    signingKey("stranger", "RS256"),
  ]);
  jwks = await JwksServer.start([rsa.jwk, ec.jwk, ed.jwk]);
  closers.push(() => jwks.close());
  dir = mkdtempSync(join(tmpdir(), "golem-stream-jwt-"));
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(dir, { recursive: true, force: true });
});

/** A server authenticating with `createJwtAuth` (the file's JWKS server, no cooldown unless overridden); its URLs. */
async function serveJwt(options: Partial<JwtAuthOptions> = {}): Promise<{ url: string; httpUrl: string }> {
  const source = options.jwksFile !== undefined || options.jwks !== undefined ? {} : { jwksUrl: jwks.url };
  const { authenticator, authorizer } = createJwtAuth({
    issuer: ISSUER,
    audience: AUDIENCE,
    logger,
    refresh: { cooldownMs: 0 },
    ...source,
    ...options,
  });
  const server = createSessionServer({
    store: new MemorySessionStore(),
    host: createDemoHost(),
    keyring: Keyring.generate(),
    authenticator,
    authorizer,
    logger,
  });
  closers.push(() => server.close());
  return server.listen(0, "127.0.0.1");
}

async function token(key: SigningKey, claims: JWTPayload = {}): Promise<string> {
  const signed = await sign(key, claims);
  issued.push(signed);
  return signed;
}

const now = (): number => Math.floor(Date.now() / 1000);
const count = () => demoStart("count", v.record(v.u32(3), v.u32(0)));

/** Starts `count` with `bearer`; the first answer (invocationAccepted or invocationRejected). */
async function start(url: string, bearer: string, message = count()) {
  const client = await RawClient.connect(url, bearer);
  client.send(message);
  const answer = await client.waitFor((m) => m.type === "invocationAccepted" || m.type === "invocationRejected");
  client.socket.terminate();
  return answer;
}

function refusals(): unknown[] {
  return logger.lines.filter(([, message]) => message === "bearer JWT refused").map(([, , fields]) => fields);
}

describe("bearer JWTs at the handshake", () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await serveJwt());
  });

  it("opens a session for a valid token signed RS256, ES256 or EdDSA", async () => {
    for (const key of [rsa, ec, ed]) expect(await handshake(url, await token(key))).toBe("open");
  });

  it("refuses an expired token 401, and accepts one expired within the clock tolerance (60 s by default)", async () => {
    expect(await handshake(url, await token(rsa, { exp: now() - 120 }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWT_EXPIRED", claim: "exp" });
    expect(await handshake(url, await token(rsa, { exp: now() - 30 }))).toBe("open");
  });

  it("refuses a token not yet valid, and accepts one whose nbf is within the clock tolerance", async () => {
    expect(await handshake(url, await token(rsa, { nbf: now() + 120 }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "nbf" });
    expect(await handshake(url, await token(rsa, { nbf: now() + 30 }))).toBe("open");
  });

  it("refuses a token issued in the future, and accepts one whose iat is within the clock tolerance", async () => {
    expect(await handshake(url, await token(rsa, { iat: now() + 24 * 3600 }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "iat" });
    expect(await handshake(url, await token(rsa, { iat: now() + 30 }))).toBe("open");
  });

  it("the clock tolerance is an option", async () => {
    const strict = await serveJwt({ clockToleranceSeconds: 0 });
    expect(await handshake(strict.url, await token(rsa, { exp: now() - 30 }))).toEqual(UNAUTHENTICATED);
  });

  it("refuses a wrong issuer, a wrong audience and a token without exp", async () => {
    expect(await handshake(url, await token(rsa, { iss: "https://other.example" }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "iss" });
    expect(await handshake(url, await token(rsa, { aud: "someone-else" }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "aud" });
    expect(await handshake(url, await token(rsa, { exp: undefined }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "exp" });
  });

  it("refuses a token signed by a key the JWKS does not have (unknown kid)", async () => {
    expect(await handshake(url, await token(stranger))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JWKS_NO_MATCHING_KEY" });
  });

  it("refuses alg none, and HS256 with the RSA public key as the HMAC secret", async () => {
    const none = unsecured(rsa.kid);
    const forged = await hmacWithPublicKey(rsa);
    issued.push(none, forged);
    expect(await handshake(url, none)).toEqual(UNAUTHENTICATED);
    expect(await handshake(url, forged)).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "ERR_JOSE_ALG_NOT_ALLOWED" });
  });

  it("refuses a token of an algorithm the options leave out", async () => {
    const rsaOnly = await serveJwt({ algorithms: ["RS256"] });
    expect(await handshake(rsaOnly.url, await token(ec))).toEqual(UNAUTHENTICATED);
    expect(await handshake(rsaOnly.url, await token(rsa))).toBe("open");
  });

  it("refuses what is not a JWT", async () => {
    expect(await handshake(url, "not-a-jwt")).toEqual(UNAUTHENTICATED);
  });

  it("answers internal-error (500, retryable) while the key set cannot be fetched", async () => {
    const down = await JwksServer.start([rsa.jwk]);
    closers.push(() => down.close());
    down.failWith = 503;
    const server = await serveJwt({ jwksUrl: down.url });
    expect(await handshake(server.url, await token(rsa))).toEqual({
      status: 500,
      body: { code: "internal-error", error: "internal error" },
    });
    // A body over 1 MiB is not read to its end.
    down.failWith = undefined;
    down.padding = 2 * 1024 * 1024;
    expect(await handshake(server.url, await token(rsa))).toEqual({
      status: 500,
      body: { code: "internal-error", error: "internal error" },
    });
    expect(logger.lines).toContainEqual([
      "error",
      "authenticator failed",
      { event: "auth.error", error: "Error: cannot verify bearer JWTs: the key set is unavailable (RangeError)" },
    ]);
    down.padding = 0;
    expect(await handshake(server.url, await token(rsa))).toBe("open");
  });
});

describe("key rotation through the JWKS", () => {
  it("a resume after the JWKS rotated authenticates with a token of the new key (one fetch per new key)", async () => {
    const keys = await JwksServer.start([rsa.jwk]);
    closers.push(() => keys.close());
    const { url } = await serveJwt({ jwksUrl: keys.url });
    const accepted = await start(url, await token(rsa));
    expect(accepted.type).toBe("invocationAccepted");
    expect(keys.fetches).toBe(1);

    keys.keys = [rotated.jwk];
    const client = await RawClient.connect(url, await token(rotated));
    client.send(resumeAttach("resume", (accepted as { sessionToken: string }).sessionToken));
    expect((await client.waitFor((m) => m.type === "invocationAccepted" || m.type === "invocationRejected")).type).toBe(
      "invocationAccepted",
    );
    client.socket.terminate();
    expect(keys.fetches).toBe(2);
    // A takeover presents its own token too: the same subject is accepted, another is not.
    const takeover = async (bearer: string) => {
      const taker = await RawClient.connect(url, bearer);
      taker.send(resumeAttach("takeover", (accepted as { sessionToken: string }).sessionToken));
      const answer = await taker.waitFor((m) => m.type === "invocationAccepted" || m.type === "invocationRejected");
      taker.socket.terminate();
      return answer;
    };
    expect((await takeover(await token(rotated))).type).toBe("invocationAccepted");
    expect(await takeover(await token(rotated, { sub: `mallory-${CLAIM_MARKER}` }))).toMatchObject({
      type: "invocationRejected",
      code: "invalid-token",
    });
    expect(keys.fetches).toBe(2);
    // The retired key's tokens no longer verify.
    expect(await handshake(url, await token(rsa))).toEqual(UNAUTHENTICATED);
  });

  it("within the cooldown a token naming an unknown key is refused without fetching the set again", async () => {
    const keys = await JwksServer.start([rsa.jwk]);
    closers.push(() => keys.close());
    const { url } = await serveJwt({ jwksUrl: keys.url, refresh: {} });
    expect(await handshake(url, await token(rsa))).toBe("open");
    for (let attempt = 0; attempt < 3; attempt++) expect(await handshake(url, await token(stranger))).toEqual(UNAUTHENTICATED);
    expect(keys.fetches).toBe(1);
  });

  it("while the identity provider fails, tokens with made-up keys cause at most one fetch per cooldown; the keys had before stay in use", async () => {
    const keys = await JwksServer.start([rsa.jwk]);
    closers.push(() => keys.close());
    let clock = Date.now();
    const { url } = await serveJwt({ jwksUrl: keys.url, refresh: {}, now: () => clock });
    // Down before any set was had: one fetch, then internal-error without another.
    keys.failWith = 503;
    for (let attempt = 0; attempt < 5; attempt++) expect(await handshake(url, await token(stranger))).toMatchObject({ status: 500 });
    expect(keys.fetches).toBe(1);
    // Back once the cooldown has passed.
    keys.failWith = undefined;
    clock += 30_000;
    expect(await handshake(url, await token(rsa))).toBe("open");
    expect(keys.fetches).toBe(2);
    // Down again when the set is due (its age past maxAgeMs): one failed fetch; the set had before still verifies.
    keys.failWith = 503;
    clock += 600_000;
    expect(await handshake(url, await token(rsa))).toBe("open");
    for (let attempt = 0; attempt < 5; attempt++) expect(await handshake(url, await token(stranger))).toEqual(UNAUTHENTICATED);
    expect(await handshake(url, await token(rsa))).toBe("open");
    expect(keys.fetches).toBe(3);
    expect(logger.lines).toContainEqual(["warn", "cannot fetch the JWKS; keeping the keys had before", expect.anything()]);
  });

  it("a fresh set keeps verifying while a fetch for a key it lacks hangs", async () => {
    const keys = await JwksServer.start([rsa.jwk]);
    closers.push(() => keys.close());
    const { url } = await serveJwt({ jwksUrl: keys.url });
    expect(await handshake(url, await token(rsa))).toBe("open");
    keys.hold = true;
    let unknownAnswered = false;
    const unknownKey = handshake(url, await token(stranger)).finally(() => (unknownAnswered = true));
    // Its fetch is under way, and hangs.
    await keys.heldFetch();
    expect(await handshake(url, await token(rsa))).toBe("open");
    expect(unknownAnswered).toBe(false);
    keys.release();
    expect(await unknownKey).toEqual(UNAUTHENTICATED);
  });

  it("a set older than refresh.maxAgeMs is fetched again", async () => {
    const keys = await JwksServer.start([rsa.jwk]);
    closers.push(() => keys.close());
    const { url } = await serveJwt({ jwksUrl: keys.url, refresh: { maxAgeMs: 0 } });
    expect(await handshake(url, await token(rsa))).toBe("open");
    expect(await handshake(url, await token(rsa))).toBe("open");
    expect(keys.fetches).toBe(2);
  });

  it("a JWKS file is read again when a token names a key it lacks, once the cooldown has passed", async () => {
    const path = join(dir, "jwks.json");
    writeFileSync(path, JSON.stringify({ keys: [rsa.jwk] }));
    let clock = Date.now();
    const { url } = await serveJwt({ jwksFile: path, refresh: {}, now: () => clock });
    expect(await handshake(url, await token(rsa))).toBe("open");
    writeFileSync(path, JSON.stringify({ keys: [rsa.jwk, rotated.jwk] }));
    expect(await handshake(url, await token(rotated))).toEqual(UNAUTHENTICATED);
    clock += 30_000;
    expect(await handshake(url, await token(rotated))).toBe("open");
  });

  it("a JWKS file that cannot be read or is not a key set fails at creation, naming the file", () => {
    const missing = join(dir, "missing.json");
    expect(() => createJwtAuth({ jwksFile: missing, issuer: ISSUER, audience: AUDIENCE })).toThrow(
      `the JWKS file ${missing} cannot be read (ENOENT)`,
    );
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ keys: "none" }));
    expect(() => createJwtAuth({ jwksFile: bad, issuer: ISSUER, audience: AUDIENCE })).toThrow(
      `the JWKS file ${bad} is not a JWKS: it needs a "keys" array of JWK objects`,
    );
  });

  it("options are checked at creation: one key source, issuer and audience required, only asymmetric algorithms", () => {
    const base = { jwksUrl: "https://issuer.example/jwks.json", issuer: ISSUER, audience: AUDIENCE };
    expect(() => createJwtAuth({ ...base, jwks: { keys: [] } })).toThrow("exactly one of");
    expect(() => createJwtAuth({ ...base, issuer: "" })).toThrow("options.issuer is required");
    expect(() => createJwtAuth({ ...base, audience: [] })).toThrow("options.audience is required");
    expect(() => createJwtAuth({ ...base, algorithms: ["HS256" as never] })).toThrow(
      "options.algorithms must be a non-empty subset of RS256, ES256, EdDSA",
    );
    expect(() => createJwtAuth({ ...base, jwksUrl: "file:///etc/jwks.json" })).toThrow("options.jwksUrl must be an http: or https: URL");
  });
});

describe("claims to caller", () => {
  it("by default the principal is sub and the account is iss (bound into the session's tokens)", async () => {
    const { url } = await serveJwt();
    const accepted = await start(url, await token(rsa));
    expect(inspectToken((accepted as { sessionToken: string }).sessionToken).fields).toMatchObject({ account: ISSUER, principal: SUBJECT });
  });

  it("principalClaim and accountClaim choose other claims; a token without one is refused", async () => {
    const { url } = await serveJwt({ principalClaim: "email", accountClaim: "org" });
    const claims = { email: `mail-${CLAIM_MARKER}@example.com`, org: `org-${CLAIM_MARKER}` };
    const accepted = await start(url, await token(rsa, claims));
    expect(inspectToken((accepted as { sessionToken: string }).sessionToken).fields).toMatchObject({
      account: claims.org,
      principal: claims.email,
    });
    expect(await handshake(url, await token(rsa, { email: claims.email }))).toEqual(UNAUTHENTICATED);
    expect(refusals()).toContainEqual({ event: "auth.jwt-refused", reason: "identity-claim-missing", claim: "org" });
    expect(await handshake(url, await token(rsa, { email: 42, org: claims.org }))).toEqual(UNAUTHENTICATED);
  });
});

describe("authorization by claim", () => {
  const scoped = (scope: string) => token(rsa, { scope: `openid ${scope} profile-${CLAIM_MARKER}` });

  it("a scope grant naming a method allows exactly that method; others are forbidden after authentication", async () => {
    const { url } = await serveJwt({ authorization: { claim: "scope", prefix: "stream:" } });
    const bearer = await scoped("stream:demo/default/echo/count");
    expect((await start(url, bearer)).type).toBe("invocationAccepted");
    expect(await start(url, bearer, demoStart("blobs", v.record(v.u32(1), v.u32(1))))).toMatchObject({
      type: "invocationRejected",
      code: "forbidden",
      retryable: false,
    });
    // Without the prefix the entry is not a grant; without the claim nothing is granted.
    expect(await start(url, await scoped("demo/default/echo/count"))).toMatchObject({ type: "invocationRejected", code: "forbidden" });
    expect(await start(url, await token(rsa))).toMatchObject({ type: "invocationRejected", code: "forbidden" });
  });

  it("a roles array naming an application or a pattern with * allows what it covers", async () => {
    const { url } = await serveJwt({ authorization: { claim: "roles" } });
    expect((await start(url, await token(rsa, { roles: ["demo"] }))).type).toBe("invocationAccepted");
    expect((await start(url, await token(rsa, { roles: ["other", "*/default/echo"] }))).type).toBe("invocationAccepted");
    expect(await start(url, await token(rsa, { roles: ["demo/production", `app-${CLAIM_MARKER}`] }))).toMatchObject({
      type: "invocationRejected",
      code: "forbidden",
    });
  });

  it("a resume is authorized with the claims of the token it presents", async () => {
    const { url } = await serveJwt({ authorization: { claim: "scope" } });
    const accepted = await start(url, await token(rsa, { scope: "demo" }));
    const client = await RawClient.connect(url, await token(rsa, { scope: `other-${CLAIM_MARKER}` }));
    client.send(resumeAttach("resume", (accepted as { sessionToken: string }).sessionToken));
    expect(await client.waitFor((m) => m.type === "invocationAccepted" || m.type === "invocationRejected")).toMatchObject({
      type: "invocationRejected",
      code: "forbidden",
    });
    client.socket.terminate();
  });

  it("discovery of an environment needs a grant inside it (403 forbidden otherwise)", async () => {
    const { httpUrl } = await serveJwt({ authorization: { claim: "scope" } });
    const discover = async (scope: string) => {
      const response = await fetch(`${httpUrl}${DISCOVERY_PATH}?application=demo&environment=default`, {
        headers: { authorization: `Bearer ${await token(rsa, { scope })}` },
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    expect((await discover("demo/default/echo/count")).status).toBe(200);
    expect(await discover(`demo/staging other-${CLAIM_MARKER}`)).toEqual({
      status: 403,
      body: { code: "forbidden", error: "the caller may not read this catalogue" },
    });
  });
});

describe("an authorizer of your own", () => {
  it("reads the verified claims of the caller with claimsOf", async () => {
    const jwt = createJwtAuth({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, logger });
    const server = createSessionServer({
      store: new MemorySessionStore(),
      host: createDemoHost(),
      keyring: Keyring.generate(),
      authenticator: jwt.authenticator,
      authorizer: ({ caller }) => jwt.claimsOf(caller)?.["tier"] === "gold",
    });
    closers.push(() => server.close());
    const { url } = await server.listen(0, "127.0.0.1");
    expect((await start(url, await token(rsa, { tier: "gold" }))).type).toBe("invocationAccepted");
    expect(await start(url, await token(rsa, { tier: "tin" }))).toMatchObject({ type: "invocationRejected", code: "forbidden" });
    expect(jwt.claimsOf({ account: ISSUER, principal: SUBJECT })).toBeUndefined();
  });
});

describe("beside static tokens (startEmbeddedServer, serve)", () => {
  it("a static token may do everything; a JWT is authorized by its grants; anything else is refused", async () => {
    const jwt = createJwtAuth({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, authorization: { claim: "scope" }, logger });
    const server = await startEmbeddedServer({
      dataDir: join(dir, "embedded"),
      tokens: ["static-dev-token"],
      authentication: jwt,
      logger,
      synchronous: "normal",
    });
    closers.push(() => server.close());
    expect((await start(server.url, "static-dev-token")).type).toBe("invocationAccepted");
    expect((await start(server.url, await token(rsa, { scope: "demo/default" }))).type).toBe("invocationAccepted");
    expect(await start(server.url, await token(rsa, { scope: "shop" }))).toMatchObject({ type: "invocationRejected", code: "forbidden" });
    expect(await handshake(server.url, "another-token")).toEqual(UNAUTHENTICATED);
  });

  it("no static token is needed when another authentication is given (and one is without)", async () => {
    const jwt = createJwtAuth({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE });
    await expect(startEmbeddedServer({ dataDir: join(dir, "no-tokens"), tokens: [] })).rejects.toThrow(
      "options.tokens must not be empty without options.authentication",
    );
    const server = await startEmbeddedServer({ dataDir: join(dir, "jwt-only"), tokens: [], authentication: jwt, synchronous: "normal" });
    closers.push(() => server.close());
    expect(await handshake(server.url, await token(rsa))).toBe("open");
  });
});

describe("logs", () => {
  it("no token and no claim value reached the logger in this file", () => {
    expect(issued.length).toBeGreaterThan(30);
    expect(refusals().length).toBeGreaterThan(10);
    const text = JSON.stringify(logger.lines);
    for (const bearer of issued) {
      expect(text).not.toContain(bearer);
      for (const part of bearer.split(".")) if (part.length > 8) expect(text).not.toContain(part);
    }
    expect(text).not.toContain(CLAIM_MARKER);
  });
});
