/**
 * Properties over generated fields and tokens (fast-check):
 * mint then verify is the identity; every single-character change of a
 * valid token is rejected; arbitrary input only ever fails with
 * InvalidTokenError; and anything verification accepts re-mints to the very
 * same text (the encoding is canonical).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  InvalidTokenError,
  Keyring,
  mintToken,
  verifyToken,
  inspectToken,
  type CursorTokenFields,
  type SessionTokenFields,
  type StreamTokenFields,
  type TokenFields,
  type TokenKind,
} from "../src/index.js";
import { rawPayload, rawSignature, rawToken, type RawField } from "./support/raw-token.js";
import { SECRETS, rawFields } from "./support/vectors.js";
import { jsonFields } from "./support/typed.js";
import { keyringAfter } from "./support/fixtures.js";

const keyring = keyringAfter(); // active k-2026, verify-only k-2025

const text = fc.string({ unit: "grapheme", minLength: 1, maxLength: 24 });
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const uuid = fc.uuid().map((value) => value.toLowerCase());
const digest = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString("hex"));
const common = { issuer: text, audience: text, account: text, principal: text, issuedAt: u64 };

const sessionFields: fc.Arbitrary<SessionTokenFields> = fc.record(
  {
    ...common,
    sessionId: uuid,
    application: text,
    environment: text,
    agentType: text,
    agentIdentity: digest,
    method: text,
    generation: u64,
    idempotencyKey: text,
    streamKeyId: fc.constantFrom("k-2025", "k-2026", "ключ"),
  },
  {
    noNullPrototype: true,
    requiredKeys: [
      "issuer",
      "audience",
      "account",
      "principal",
      "issuedAt",
      "sessionId",
      "application",
      "environment",
      "agentType",
      "agentIdentity",
      "method",
      "generation",
      "idempotencyKey",
    ],
  },
);
const streamFields: fc.Arbitrary<StreamTokenFields> = fc.record(
  {
    ...common,
    sessionId: uuid,
    streamId: uuid,
    direction: fc.constantFrom("input" as const, "output" as const),
    elementSchemaDigest: digest,
    coordinate: text,
  },
  { noNullPrototype: true },
);
const cursorFields: fc.Arbitrary<CursorTokenFields> = fc.record(
  {
    ...common,
    sessionId: uuid,
    streamId: uuid,
    position: u64,
    event: fc.constantFrom("item" as const, "terminal" as const),
  },
  { noNullPrototype: true },
);

const anyToken: fc.Arbitrary<{ kind: TokenKind; fields: TokenFields<TokenKind> }> = fc.oneof(
  sessionFields.map((fields) => ({ kind: "session" as const, fields })),
  streamFields.map((fields) => ({ kind: "stream" as const, fields })),
  cursorFields.map((fields) => ({ kind: "cursor" as const, fields })),
);

function rejects(run: () => unknown): boolean {
  try {
    run();
    return false;
  } catch (error) {
    if (error instanceof InvalidTokenError) return true;
    throw error;
  }
}

describe("properties", () => {
  it("mint then verify (and inspect) returns the fields", () => {
    fc.assert(
      fc.property(anyToken, ({ kind, fields }) => {
        const token = mintToken(kind, fields, keyring);
        expect(verifyToken(token, kind, keyring)).toStrictEqual({ kind, keyId: "k-2026", fields });
        expect(inspectToken(token).fields).toStrictEqual(fields);
      }),
      { numRuns: 300 },
    );
  });

  it("any single-character replacement, deletion or insertion in a token is rejected", () => {
    const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/ .é";
    fc.assert(
      fc.property(
        anyToken,
        fc.nat(),
        fc.constantFrom(...ALPHABET),
        fc.constantFrom("replace", "delete", "insert"),
        ({ kind, fields }, at, char, edit) => {
          const token = mintToken(kind, fields, keyring);
          const index = at % token.length;
          let mutated: string;
          if (edit === "delete") mutated = token.slice(0, index) + token.slice(index + 1);
          else if (edit === "insert") mutated = token.slice(0, index) + char + token.slice(index);
          else mutated = token.slice(0, index) + char + token.slice(index + 1);
          fc.pre(mutated !== token);
          expect(rejects(() => verifyToken(mutated, kind, keyring))).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("any single-bit flip of the decoded bytes is rejected", () => {
    fc.assert(
      fc.property(anyToken, fc.nat(), fc.integer({ min: 0, max: 7 }), ({ kind, fields }, at, bit) => {
        const bytes = Buffer.from(mintToken(kind, fields, keyring).slice(5), "base64url");
        const index = at % bytes.length;
        bytes[index] = bytes[index]! ^ (1 << bit);
        expect(rejects(() => verifyToken(`gai1_${bytes.toString("base64url")}`, kind, keyring))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("arbitrary text fails only with InvalidTokenError", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.string({ maxLength: 300 }).map((s) => `gai1_${s}`),
        ),
        (input) => {
          expect(rejects(() => verifyToken(input, "session", keyring))).toBe(true);
          expect(rejects(() => inspectToken(input))).toBe(true);
        },
      ),
    );
  });

  it("a validly signed, structurally perturbed payload is either rejected or re-mints to the same text", () => {
    // Start from the raw fields of a valid token and perturb them the ways an
    // encoder bug would (drop, repeat, swap, renumber, resize, append), then
    // sign properly so the field checks are what decides.
    const perturbation = fc.oneof(
      fc.record({ op: fc.constant("none" as const), at: fc.nat() }),
      fc.record({ op: fc.constantFrom("drop" as const, "repeat" as const, "swap" as const, "resize" as const), at: fc.nat() }),
      fc.record({ op: fc.constant("renumber" as const), at: fc.nat(), id: fc.integer({ min: 0, max: 255 }) }),
      fc.record({
        op: fc.constant("append" as const),
        at: fc.nat(),
        id: fc.integer({ min: 0, max: 255 }),
        bytes: fc.uint8Array({ maxLength: 20 }),
      }),
    );
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(anyToken, fc.array(perturbation, { maxLength: 2 }), ({ kind, fields }, edits) => {
        let raw: RawField[] = rawFields(kind, jsonFields(fields));
        for (const edit of edits) {
          const i = edit.at % raw.length;
          const target = raw[i]!;
          if (edit.op === "drop") raw = raw.filter((_, j) => j !== i);
          else if (edit.op === "repeat") raw = [...raw.slice(0, i + 1), target, ...raw.slice(i + 1)];
          else if (edit.op === "swap" && i + 1 < raw.length) raw = [...raw.slice(0, i), raw[i + 1]!, target, ...raw.slice(i + 2)];
          else if (edit.op === "resize") raw = raw.map((f, j) => (j === i ? { id: f.id, bytes: Uint8Array.from([...f.bytes, 0x61]) } : f));
          else if (edit.op === "renumber") raw = raw.map((f, j) => (j === i ? { id: edit.id, bytes: f.bytes } : f));
          else if (edit.op === "append") raw = [...raw, { id: edit.id, bytes: edit.bytes }];
        }
        const kindByte = kind === "session" ? 1 : kind === "stream" ? 2 : 3;
        const payload = rawPayload({ kindByte, keyId: "k-2026", fields: raw });
        const token = rawToken(payload, rawSignature(SECRETS["k-2026"]!, kind, payload));
        let verified;
        try {
          verified = verifyToken(token, kind, keyring);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidTokenError);
          rejected++;
          return;
        }
        accepted++;
        expect(mintToken(kind, verified.fields, keyring)).toBe(token);
      }),
      { numRuns: 1000 },
    );
    // Both outcomes must occur, or the property tested nothing.
    expect(accepted).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
  });

  it("a fully valid arbitrary payload re-mints to the same text", () => {
    // The same round trip from the other side: raw bytes built from generated typed fields.
    fc.assert(
      fc.property(anyToken, ({ kind, fields }) => {
        const token = mintToken(kind, fields, keyring);
        const again = mintToken(kind, verifyToken(token, kind, keyring).fields, keyring);
        expect(again).toBe(token);
      }),
      { numRuns: 100 },
    );
  });
});

describe("keyring wiring", () => {
  it("a token verifies only with a keyring holding its key with the same secret", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 64 }),
        fc.uint8Array({ minLength: 32, maxLength: 64 }),
        cursorFields,
        (a, b, fields) => {
          fc.pre(Buffer.compare(Buffer.from(a), Buffer.from(b)) !== 0);
          const mine = new Keyring({ active: "k", keys: [{ id: "k", secret: a }] });
          const theirs = new Keyring({ active: "k", keys: [{ id: "k", secret: b }] });
          const token = mintToken("cursor", fields, mine);
          expect(verifyToken(token, "cursor", mine).fields).toStrictEqual(fields);
          expect(rejects(() => verifyToken(token, "cursor", theirs))).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});
