/**
 * The per-stream cursor minter makes exactly the tokens `mintToken` makes
 * for the same fields (the server mints one per output event through it),
 * and refuses what `mintToken` refuses.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Keyring, cursorMinter, mintToken, verifyToken, type CursorEvent } from "../src/index.js";
import { keyringAfter } from "./support/fixtures.js";

const text = fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 });
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const uuid = fc.uuid().map((value) => value.toLowerCase());
const event = fc.constantFrom<CursorEvent>("item", "terminal");
const streamFields = fc.record({ issuer: text, audience: text, account: text, principal: text, sessionId: uuid, streamId: uuid });

describe("cursorMinter", () => {
  it("mints byte for byte what mintToken mints, token after token", () => {
    fc.assert(
      fc.property(
        streamFields,
        fc.array(fc.tuple(u64, u64, event), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        (fields, cursors, rotated) => {
          const keyring = rotated ? keyringAfter() : Keyring.generate("k1");
          const minter = cursorMinter(keyring, fields);
          for (const [issuedAt, position, which] of cursors) {
            const token = minter.mint(issuedAt, position, which);
            expect(token).toBe(mintToken("cursor", { ...fields, issuedAt, position, event: which }, keyring));
            expect(verifyToken(token, "cursor", keyring).fields).toMatchObject({ position, event: which, issuedAt });
          }
        },
      ),
    );
  });

  it("mints many tokens of one millisecond, then of another, then of the first again, each as mintToken does", () => {
    // The minter keeps the signature state over the bytes from issuedAt to position for the
    // current millisecond: a stale one would sign the wrong issuedAt or ids.
    const millis = fc.array(u64, { minLength: 2, maxLength: 3 });
    fc.assert(
      fc.property(
        streamFields,
        millis,
        fc.array(fc.tuple(fc.nat({ max: 2 }), u64, event), { minLength: 4, maxLength: 24 }),
        (fields, issued, cursors) => {
          const keyring = Keyring.generate("k1");
          const minter = cursorMinter(keyring, fields);
          for (const [pick, position, which] of cursors) {
            const issuedAt = issued[pick % issued.length]!;
            expect(minter.mint(issuedAt, position, which)).toBe(
              mintToken("cursor", { ...fields, issuedAt, position, event: which }, keyring),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("refuses what mintToken refuses, naming the field", () => {
    const keyring = Keyring.generate("k1");
    const fields = {
      issuer: "i",
      audience: "a",
      account: "acc",
      principal: "p",
      sessionId: "6f1c2b9e-8a47-4e1f-9c3d-2b7a1e5f4c6d",
      streamId: "0f1c2b9e-8a47-4e1f-9c3d-2b7a1e5f4c6d",
    };
    expect(() => cursorMinter(keyring, { ...fields, sessionId: "not-a-uuid" })).toThrow(
      expect.objectContaining({ path: "fields.sessionId" }),
    );
    expect(() => cursorMinter(keyring, { ...fields, issuer: "\ud800" })).toThrow(expect.objectContaining({ path: "fields.issuer" }));
    expect(() => cursorMinter(keyring, { ...fields, position: 1n } as never)).toThrow(expect.objectContaining({ path: "fields.position" }));
    const minter = cursorMinter(keyring, fields);
    expect(() => minter.mint(-1n, 0n, "item")).toThrow(expect.objectContaining({ path: "issuedAt" }));
    expect(() => minter.mint(0n, 1n << 64n, "item")).toThrow(expect.objectContaining({ path: "position" }));
    expect(() => minter.mint(0n, 0n, "toString" as CursorEvent)).toThrow(expect.objectContaining({ path: "event" }));
    expect(() => minter.mint(0n, 0n, 1 as unknown as CursorEvent)).toThrow(expect.objectContaining({ path: "event" }));
    // A failed call leaves the minter as it was.
    expect(minter.mint(5n, 7n, "terminal")).toBe(
      mintToken("cursor", { ...fields, issuedAt: 5n, position: 7n, event: "terminal" }, keyring),
    );
  });
});
