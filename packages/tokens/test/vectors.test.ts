/**
 * The golden vectors of fixtures/stream-session-v1/tokens.json, consumed the
 * way every runtime must: mint reproduces each valid token byte for byte,
 * verify returns its fields, every invalid token fails with its reason, and
 * the key-rotation set behaves as protocol section 10.1 says.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  InvalidTokenError,
  Keyring,
  inspectToken,
  mintToken,
  refreshedSessionFields,
  streamTokenKeyId,
  verifyToken,
  type TokenKind,
} from "../src/index.js";
import { tokenBytes } from "./support/raw-token.js";
import { typedFields, jsonFields } from "./support/typed.js";
import { buildVectors, type JsonFields } from "./support/vectors.js";

const FILE = fileURLToPath(new URL("../../../fixtures/stream-session-v1/tokens.json", import.meta.url));

interface SignedCase {
  name: string;
  description: string;
  kind: TokenKind;
  keyId: string;
  fields: JsonFields;
  payloadHex: string;
  signatureHex: string;
  token: string;
}
interface ValidCase extends SignedCase {
  keyring: string;
}
interface RotationCase extends SignedCase {
  verifiesWith: string[];
  rejectedWith?: { keyring: string; reason: string };
}
interface InvalidCase {
  name: string;
  description: string;
  keyring: string;
  expectedKind: TokenKind;
  token: string;
  reason: string;
}
interface VectorFile {
  keyrings: Record<string, unknown>;
  valid: ValidCase[];
  rotation: { cases: RotationCase[] };
  invalid: InvalidCase[];
}

const built = `${JSON.stringify(buildVectors(), null, 2)}\n`;
if (process.env["UPDATE_VECTORS"] === "1") writeFileSync(FILE, built);
const text = readFileSync(FILE, "utf8");
const vectors = JSON.parse(text) as VectorFile;
const keyring = (name: string): Keyring => Keyring.fromJSON(JSON.stringify(vectors.keyrings[name]));

function rejectionReason(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidTokenError);
    const invalid = error as InvalidTokenError;
    expect(invalid.code).toBe("invalid-token");
    return invalid.reason;
  }
  throw new Error("expected the token to be rejected");
}

describe("tokens.json", () => {
  it("is what the independent builder in test/support/vectors.ts produces (UPDATE_VECTORS=1 rewrites it)", () => {
    expect(text).toBe(built);
  });

  it("gives every case a name and a one-line description, names unique", () => {
    const cases = [...vectors.valid, ...vectors.rotation.cases, ...vectors.invalid];
    for (const entry of cases) {
      expect(entry.name).toMatch(/^[a-z0-9-]+$/);
      expect(entry.description.length).toBeGreaterThan(0);
      expect(entry.description).not.toContain("\n");
    }
    expect(new Set(cases.map((entry) => entry.name)).size).toBe(cases.length);
  });

  describe.each(vectors.valid)("valid $name", (vector) => {
    it("mints byte-identically", () => {
      expect(mintToken(vector.kind, typedFields(vector.kind, vector.fields), keyring(vector.keyring))).toBe(vector.token);
    });
    it("verifies to its fields and key", () => {
      const verified = verifyToken(vector.token, vector.kind, keyring(vector.keyring));
      expect(verified.kind).toBe(vector.kind);
      expect(verified.keyId).toBe(vector.keyId);
      expect(verified.fields).toStrictEqual(typedFields(vector.kind, vector.fields));
    });
    it("is gai1_ + base64url(payload || signature)", () => {
      expect(tokenBytes(vector.token).toString("hex")).toBe(vector.payloadHex + vector.signatureHex);
      expect(inspectToken(vector.token)).toStrictEqual({
        kind: vector.kind,
        keyId: vector.keyId,
        fields: typedFields(vector.kind, vector.fields),
        signatureValid: undefined,
      });
    });
  });

  describe.each(vectors.invalid)("invalid $name", (vector) => {
    it(`is rejected: ${vector.reason}`, () => {
      expect(rejectionReason(() => verifyToken(vector.token, vector.expectedKind, keyring(vector.keyring)))).toBe(vector.reason);
    });
  });

  describe("key rotation", () => {
    const byName = new Map(vectors.rotation.cases.map((entry) => [entry.name, entry]));
    const get = (name: string): RotationCase => byName.get(name)!;

    it.each(vectors.rotation.cases)("$name verifies with its keyrings and is rejected where its key is gone", (entry) => {
      for (const name of entry.verifiesWith) {
        expect(verifyToken(entry.token, entry.kind, keyring(name)).fields).toStrictEqual(typedFields(entry.kind, entry.fields));
      }
      if (entry.rejectedWith !== undefined) {
        const { keyring: name, reason } = entry.rejectedWith;
        expect(rejectionReason(() => verifyToken(entry.token, entry.kind, keyring(name)))).toBe(reason);
      }
    });

    it("replays the rotation through the API: same stream token text, refreshed session pins field 24", () => {
      const before = keyring("before");
      const after = keyring("after");
      const oldSession = get("old-session-token");
      const stream = get("stream-token");

      const original = verifyToken(oldSession.token, "session", before);
      const streamKeyBefore = streamTokenKeyId(original.fields, original.keyId);
      expect(streamKeyBefore).toBe("k-2025");
      expect(mintToken("stream", typedFields("stream", stream.fields), before, { keyId: streamKeyBefore })).toBe(stream.token);

      // The resume after rotation verifies the old token with the new keyring and refreshes it.
      const resumed = verifyToken(oldSession.token, "session", after);
      const refreshedExpected = get("refreshed-session-token");
      const refreshedFields = refreshedSessionFields(resumed, { generation: 2n, issuedAt: 1796086800000n });
      expect(jsonFields(refreshedFields)).toStrictEqual(refreshedExpected.fields);
      const refreshed = mintToken("session", refreshedFields, after);
      expect(refreshed).toBe(refreshedExpected.token);

      const reverified = verifyToken(refreshed, "session", after);
      expect(reverified.keyId).toBe("k-2026");
      const streamKeyAfter = streamTokenKeyId(reverified.fields, reverified.keyId);
      expect(streamKeyAfter).toBe("k-2025");
      expect(mintToken("stream", typedFields("stream", stream.fields), after, { keyId: streamKeyAfter })).toBe(stream.token);

      const cursor = get("cursor-token-after-rotation");
      expect(mintToken("cursor", typedFields("cursor", cursor.fields), after)).toBe(cursor.token);
    });
  });
});
