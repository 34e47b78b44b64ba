/**
 * `golem-stream serve --jwt-jwks FILE` as a real process: bearer JWTs of the
 * issuer are accepted by `invoke`, refused ones exit `rejected`, the grants
 * claim is enforced, no token is generated, and neither a token nor a claim
 * value reaches the server's log.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from "jose";
import { describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, startServe } from "./support/processes.js";

const ISSUER = "https://login.example";
const AUDIENCE = "golem-stream";
const MARKER = "c1a1m";

async function signer(): Promise<{ jwks: string; sign(claims: JWTPayload): Promise<string> }> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  const now = Math.floor(Date.now() / 1000);
  return {
    jwks: JSON.stringify({ keys: [jwk] }),
    sign: (claims) =>
      new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: `user-${MARKER}`, exp: now + 600, ...claims })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .sign(privateKey as CryptoKey),
  };
}

describe("serve --jwt-jwks FILE", () => {
  it("accepts the issuer's JWTs, refuses expired and ungranted ones, generates no token and logs no token or claim", async () => {
    const keys = await signer();
    const jwksFile = join(scratchDir(), "jwks.json");
    writeFileSync(jwksFile, keys.jwks);
    const dataDir = join(scratchDir(), "state");
    const server = await startServe(
      [
        "--port",
        "0",
        "--data-dir",
        dataDir,
        "--jwt-jwks",
        jwksFile,
        "--jwt-issuer",
        ISSUER,
        "--jwt-audience",
        AUDIENCE,
        "--jwt-authorization-claim",
        "scope",
        "--log-format",
        "json",
        "--log-level",
        "debug",
      ],
      dataDir,
    );
    const out = server.running.stdout().toString();
    expect(out).toContain(`bearer JWTs of issuer ${ISSUER} for audience ${AUDIENCE}, keys from ${jwksFile}, authorized by the scope claim`);
    expect(out).toContain("GOLEM_STREAM_TOKEN=<a JWT of the issuer>");
    expect(existsSync(join(dataDir, "bearer-token"))).toBe(false);

    const granted = await keys.sign({ scope: `openid demo/default/echo/count profile-${MARKER}` });
    const invoke = (token: string) =>
      run(["invoke", "echo", "count", "-c", '{"name":"x"}', "2", "0", "--retries", "0"], {
        env: { GOLEM_STREAM_URL: server.url, GOLEM_STREAM_TOKEN: token },
      });
    const ok = await invoke(granted);
    expect(ok.stderr).toBe("");
    expect(itemsOf(ok.stdout, "$")).toEqual([0, 1]);

    const expired = await keys.sign({ scope: "demo", exp: Math.floor(Date.now() / 1000) - 3600 });
    const refused = await invoke(expired);
    expect(refused.code).toBe(EXIT.rejected);
    expect(refused.stderr).toMatch(/unauthenticated/);

    const other = await keys.sign({ scope: `other-app-${MARKER}` });
    const forbidden = await invoke(other);
    expect(forbidden.code).toBe(EXIT.rejected);
    expect(forbidden.stderr).toMatch(/forbidden/);

    const stopped = await server.stop();
    expect(stopped.code).toBe(EXIT.success);
    expect(stopped.stderr).toContain('"reason":"ERR_JWT_EXPIRED"');
    for (const token of [granted, expired, other]) for (const part of token.split(".")) expect(stopped.stderr).not.toContain(part);
    expect(stopped.stderr).not.toContain(MARKER);
  });

  it("refuses --jwt-* flags without --jwt-jwks, a JWKS without issuer and audience, and an unreadable JWKS file, before starting", async () => {
    const dataDir = join(scratchDir(), "state");
    const lonely = await run(["serve", "--port", "0", "--data-dir", dataDir, "--jwt-issuer", ISSUER]);
    expect(lonely.code).toBe(EXIT.usage);
    expect(lonely.stderr).toContain("--jwt-issuer needs --jwt-jwks URL|FILE");
    const missing = join(scratchDir(), "missing.json");
    const noIssuer = await run(["serve", "--port", "0", "--data-dir", dataDir, "--jwt-jwks", missing]);
    expect(noIssuer.code).toBe(EXIT.usage);
    expect(noIssuer.stderr).toContain("--jwt-jwks needs --jwt-issuer and --jwt-audience");
    const unreadable = await run([
      "serve",
      "--port",
      "0",
      "--data-dir",
      dataDir,
      "--jwt-jwks",
      missing,
      "--jwt-issuer",
      ISSUER,
      "--jwt-audience",
      AUDIENCE,
    ]);
    expect(unreadable.code).toBe(EXIT.usage);
    expect(unreadable.stderr).toContain(`--jwt-jwks: the JWKS file ${missing} cannot be read (ENOENT)`);
    expect(unreadable.stdout.length).toBe(0);
  });
});
