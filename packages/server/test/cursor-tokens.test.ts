/**
 * The output pumps' cursor tokens (TokenService.cursorsOf): the tokens
 * `mintToken` makes for the same fields, signed with the keyring that is
 * active when each is minted, also after a rotation.
 */
import { describe, expect, it } from "vitest";
import { Keyring, mintToken, verifyToken } from "@golem-stream/tokens";
import { TokenService } from "../src/admission/token-service.js";

describe("TokenService.cursorsOf", () => {
  it("mints what mintToken mints, and picks up a rotated keyring at the next token", () => {
    let now = 1_700_000_000_000;
    const first = Keyring.generate("k1");
    const service = new TokenService(first, { issuer: "iss", audience: "aud" }, () => now);
    const caller = { account: "acme", principal: "alice" };
    const sessionId = "6f1c2b9e-8a47-4e1f-9c3d-2b7a1e5f4c6d";
    const streamId = "0f1c2b9e-8a47-4e1f-9c3d-2b7a1e5f4c6d";
    const expected = (keyring: Keyring, position: bigint, event: "item" | "terminal") =>
      mintToken(
        "cursor",
        { issuer: "iss", audience: "aud", ...caller, issuedAt: BigInt(now), sessionId, streamId, position, event },
        keyring,
      );
    const cursors = service.cursorsOf(caller, sessionId, streamId);
    expect(cursors(0n, "item")).toBe(expected(first, 0n, "item"));
    now += 1234;
    expect(cursors(41n, "terminal")).toBe(expected(first, 41n, "terminal"));

    const rotated = Keyring.generate("k2");
    service.setKeyring(rotated);
    const token = cursors(42n, "item");
    expect(token).toBe(expected(rotated, 42n, "item"));
    expect(verifyToken(token, "cursor", rotated).keyId).toBe("k2");
  });
});
