/**
 * verifyToken and inspectToken beyond the vectors: every rejection reason is
 * reachable, checks run in the documented order, and a rejection carries
 * nothing secret.
 */
import { describe, expect, it } from "vitest";
import {
  INVALID_TOKEN_MESSAGE,
  INVALID_TOKEN_REASONS,
  InvalidTokenError,
  assertTokenIdentity,
  inspectToken,
  isInvalidTokenError,
  mintToken,
  verifyToken,
} from "../src/index.js";
import { rawPayload, rawSignature, rawToken, text, u64 } from "./support/raw-token.js";
import { CURSOR_FIELDS, SESSION_FIELDS, STREAM_FIELDS, keyringAfter, keyringBefore, vectorFile } from "./support/fixtures.js";
import { SECRETS, rawFields } from "./support/vectors.js";
import { jsonFields } from "./support/typed.js";

function reasonOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isInvalidTokenError(error)) return error.reason;
    throw error;
  }
  return "accepted";
}

describe("rejection reasons", () => {
  it("every reason is reached by a golden vector or a test in this file", () => {
    const reached = new Set(vectorFile.invalid.map((vector) => vector.reason));
    reached.add("not-a-string"); // below: wrong-typed tokens
    reached.add("identity-mismatch"); // below: assertTokenIdentity
    expect([...reached].sort()).toStrictEqual([...INVALID_TOKEN_REASONS].sort());
  });

  it("a non-string token is not-a-string", () => {
    for (const token of [undefined, null, 42, 1n, {}, [], new Uint8Array(40), Symbol("t")]) {
      expect(reasonOf(() => verifyToken(token as unknown as string, "session", keyringBefore()))).toBe("not-a-string");
      expect(reasonOf(() => inspectToken(token as unknown as string))).toBe("not-a-string");
    }
  });
});

describe("order of checks", () => {
  const keyring = keyringBefore();
  const signedSession = (payload: Buffer, keyId = "k-2025") => rawToken(payload, rawSignature(SECRETS[keyId]!, "session", payload));

  it("length comes before the prefix and the alphabet", () => {
    expect(reasonOf(() => verifyToken(`xx${"!".repeat(9000)}`, "session", keyring))).toBe("too-long");
  });

  it("the kind is compared before the key is looked up", () => {
    const payload = rawPayload({ kindByte: 2, keyId: "k-unknown", fields: rawFields("stream", jsonFields(STREAM_FIELDS)) });
    expect(reasonOf(() => verifyToken(rawToken(payload, new Uint8Array(32)), "session", keyring))).toBe("wrong-kind");
  });

  it("the key is looked up before the signature is computed", () => {
    const payload = rawPayload({ kindByte: 1, keyId: "k-unknown", fields: [] });
    expect(reasonOf(() => verifyToken(rawToken(payload, new Uint8Array(32)), "session", keyring))).toBe("unknown-key");
  });

  it("fields are not looked at before the signature holds", () => {
    // Out-of-order, duplicate and unknown fields behind a wrong signature: only the signature is reported.
    const payload = rawPayload({ kindByte: 1, keyId: "k-2025", fields: [text(9, "x"), text(2, "a"), text(2, "a")] });
    expect(reasonOf(() => verifyToken(rawToken(payload, new Uint8Array(32)), "session", keyring))).toBe("bad-signature");
    expect(reasonOf(() => verifyToken(signedSession(payload), "session", keyring))).toBe("unknown-field");
  });

  it("within one field: order, then repetition, then the id, then bounds, then the value", () => {
    const base = rawFields("session", jsonFields(SESSION_FIELDS));
    const at = (fields: ReturnType<typeof text>[], extra = {}) =>
      reasonOf(() => verifyToken(signedSession(rawPayload({ kindByte: 1, keyId: "k-2025", fields, ...extra })), "session", keyring));
    // Field 3 repeated but with a value past the end: repetition is reported.
    expect(at([base[0]!, base[1]!, base[2]!, base[2]!], { lengthOverride: { index: 3, length: 999 } })).toBe("duplicate-field");
    // Field 2 after 3, with an empty (invalid) value: order is reported.
    expect(at([base[0]!, base[2]!, text(2, "")])).toBe("field-order");
    // An unknown id whose length runs past the end: the id is reported.
    expect(at([base[0]!, u64(7, 1n)], { lengthOverride: { index: 1, length: 999 } })).toBe("unknown-field");
    // A required field missing is only known at the end, after every present field checked out.
    expect(at([...base.slice(0, 4), text(5, "not eight bytes")])).toBe("bad-field-length");
  });
});

describe("a rejection is safe to log and to send", () => {
  const keyring = keyringBefore();
  const token = mintToken("session", SESSION_FIELDS, keyring);
  const tampered = `${token.slice(0, -3)}AAA`;
  const secretText = Buffer.from(SECRETS["k-2025"]!).toString("base64url");

  it("carries the public code, a generic message and a reason, never the token or key", () => {
    let caught: unknown;
    try {
      verifyToken(tampered, "session", keyring);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidTokenError);
    const error = caught as InvalidTokenError;
    expect(error.code).toBe("invalid-token");
    expect(error.retryable).toBe(false);
    expect(error.message).toBe(INVALID_TOKEN_MESSAGE);
    expect(error.reason).toBe("bad-signature");
    const everything = [error.message, error.stack ?? "", String(error), JSON.stringify(error), JSON.stringify({ ...error })].join("\n");
    expect(everything).not.toContain(tampered.slice(5, 40));
    expect(everything).not.toContain(secretText);
    expect(everything).not.toContain("alice");
  });

  it("names the field, not its value, when one field is at fault", () => {
    const payload = rawPayload({ kindByte: 1, keyId: "k-2025", fields: [text(1, "")] });
    try {
      verifyToken(rawToken(payload, rawSignature(SECRETS["k-2025"]!, "session", payload)), "session", keyring);
      expect.unreachable();
    } catch (error) {
      expect((error as InvalidTokenError).reason).toBe("empty-field");
      expect((error as InvalidTokenError).path).toBe("fields.1");
    }
  });
});

describe("verifyToken", () => {
  it("accepts tokens of every kind signed by a verify-only key", () => {
    const before = keyringBefore();
    const after = keyringAfter();
    expect(after.isVerifyOnly("k-2025")).toBe(true);
    for (const [kind, fields] of [
      ["session", SESSION_FIELDS],
      ["stream", STREAM_FIELDS],
      ["cursor", CURSOR_FIELDS],
    ] as const) {
      const token = mintToken(kind, fields, before);
      expect(verifyToken(token, kind, after)).toStrictEqual({ kind, keyId: "k-2025", fields });
    }
  });

  it("keeps field 24 absent when the token has none", () => {
    const { streamKeyId: _, ...legacy } = SESSION_FIELDS;
    const verified = verifyToken(mintToken("session", legacy, keyringBefore()), "session", keyringBefore());
    expect("streamKeyId" in verified.fields).toBe(false);
  });
});

describe("text fields", () => {
  const keyring = keyringBefore();
  const signedStream = (coordinate: Uint8Array) => {
    const fields = rawFields("stream", jsonFields(STREAM_FIELDS)).map((field) => (field.id === 35 ? { id: 35, bytes: coordinate } : field));
    const payload = rawPayload({ kindByte: 2, keyId: "k-2025", fields });
    return rawToken(payload, rawSignature(SECRETS["k-2025"]!, "stream", payload));
  };

  it.each([
    ["short ASCII", "result"],
    ["long ASCII", "x".repeat(500)],
    ["short non-ASCII", "zoë"],
    ["long non-ASCII", "é🔑".repeat(100)],
    ["a leading byte-order mark, kept", "\ufeffresult"],
  ])("round-trips %s", (_, coordinate) => {
    const token = mintToken("stream", { ...STREAM_FIELDS, coordinate }, keyring);
    expect(verifyToken(token, "stream", keyring).fields.coordinate).toBe(coordinate);
    expect(verifyToken(signedStream(Buffer.from(coordinate, "utf8")), "stream", keyring).fields.coordinate).toBe(coordinate);
  });

  it.each([
    ["short text ending in a truncated sequence", Buffer.from([0x61, 0xc3])],
    ["long text ending in a truncated sequence", Buffer.concat([Buffer.alloc(200, 0x61), Buffer.from([0xe2, 0x82])])],
    ["long text with a lone continuation byte", Buffer.concat([Buffer.alloc(100, 0x61), Buffer.from([0x80]), Buffer.alloc(100, 0x61)])],
  ])("rejects %s as bad-utf8", (_, bytes) => {
    expect(reasonOf(() => verifyToken(signedStream(bytes), "stream", keyring))).toBe("bad-utf8");
  });
});

describe("inspectToken", () => {
  it("decodes without keys and promises nothing about authenticity", () => {
    const token = mintToken("cursor", CURSOR_FIELDS, keyringAfter());
    expect(inspectToken(token)).toStrictEqual({ kind: "cursor", keyId: "k-2026", fields: CURSOR_FIELDS, signatureValid: undefined });
  });

  it("still decodes a token whose signature is wrong (it does not check it)", () => {
    const token = mintToken("stream", STREAM_FIELDS, keyringBefore());
    const forged = `${token.slice(0, -3)}AAA`;
    expect(inspectToken(forged).fields).toStrictEqual(STREAM_FIELDS);
  });

  it("still rejects what does not decode, with the same reasons", () => {
    expect(reasonOf(() => inspectToken("gai1_AAAA"))).toBe("too-short");
    expect(reasonOf(() => inspectToken(`gai1_${"A".repeat(9000)}`))).toBe("too-long");
  });
});

describe("assertTokenIdentity", () => {
  const fields = STREAM_FIELDS;

  it("passes when every given member matches", () => {
    expect(() =>
      assertTokenIdentity(fields, {
        issuer: fields.issuer,
        audience: fields.audience,
        account: fields.account,
        principal: fields.principal,
        sessionId: fields.sessionId,
      }),
    ).not.toThrow();
    expect(() => assertTokenIdentity(fields, {})).not.toThrow();
  });

  it.each([
    ["issuer", "fields.1"],
    ["audience", "fields.2"],
    ["account", "fields.3"],
    ["principal", "fields.4"],
    ["sessionId", "fields.16"],
  ] as const)("rejects a different %s as identity-mismatch at %s", (name, path) => {
    try {
      assertTokenIdentity(fields, { [name]: "someone-else" });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidTokenError);
      expect((error as InvalidTokenError).reason).toBe("identity-mismatch");
      expect((error as InvalidTokenError).path).toBe(path);
    }
  });
});
