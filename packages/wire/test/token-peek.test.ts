/**
 * Reading a stream or cursor token's public fields without verifying it
 * (src/token-peek.ts): the stream identity, a terminal cursor, an item
 * cursor's position, from hand-built tokens of the decisions §4 layout and
 * from the normative vectors; anything malformed reads as unknown.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { isTerminalCursor, itemCursorPosition, streamIdentityOf } from "../src/token-peek.js";

describe("token peeking: public fields read without verifying", () => {
  /** A token with the decisions §4 layout; the signature is not checked here. */
  function token(kind: number, fields: [number, Uint8Array][]): string {
    const parts: Uint8Array[] = [Uint8Array.of(1, kind, 2), Buffer.from("k1")];
    for (const [id, bytes] of fields) {
      const header = Buffer.alloc(5);
      header.writeUInt8(id, 0);
      header.writeUInt32BE(bytes.length, 1);
      parts.push(header, bytes);
    }
    parts.push(new Uint8Array(32));
    return `gai1_${Buffer.concat(parts).toString("base64url")}`;
  }
  const session = new Uint8Array(16).fill(1);
  const stream = new Uint8Array(16).fill(0xab);
  it("finds the same stream identity in a stream token and a cursor token", () => {
    const streamToken = token(2, [
      [1, Buffer.from("iss")],
      [16, session],
      [32, stream],
      [33, new Uint8Array(8)],
    ]);
    const cursorToken = token(3, [
      [1, Buffer.from("iss")],
      [16, session],
      [32, stream],
      [48, new Uint8Array(8)],
    ]);
    expect(streamIdentityOf(streamToken)).toBe("ab".repeat(16));
    expect(streamIdentityOf(cursorToken)).toBe(streamIdentityOf(streamToken));
  });
  it.each(["", "gai1_", "gai1_!!!", "xyz", "gai1_" + "A".repeat(9000), token(3, [[1, Buffer.from("x")]])])(
    "returns undefined for %#",
    (input) => expect(streamIdentityOf(input)).toBeUndefined(),
  );
  it("tells a terminal cursor from an item cursor, and knows nothing of other tokens", () => {
    const u64 = (n: number) => Buffer.from([0, 0, 0, 0, 0, 0, 0, n]);
    const cursorAt = (event: number) =>
      token(3, [
        [1, Buffer.from("iss")],
        [16, session],
        [32, stream],
        [48, u64(5)],
        [49, u64(event)],
      ]);
    expect(isTerminalCursor(cursorAt(2))).toBe(true);
    expect(isTerminalCursor(cursorAt(1))).toBe(false);
    // A stream token with the same bytes at field 49's place is no cursor.
    expect(
      isTerminalCursor(
        token(2, [
          [1, Buffer.from("iss")],
          [16, session],
          [32, stream],
          [49, u64(2)],
        ]),
      ),
    ).toBe(false);
    // Out of order fields, a short event field, trailing bytes, garbage: unknown, so not terminal.
    expect(
      isTerminalCursor(
        token(3, [
          [1, Buffer.from("iss")],
          [49, u64(2)],
          [32, stream],
        ]),
      ),
    ).toBe(false);
    expect(
      isTerminalCursor(
        token(3, [
          [1, Buffer.from("iss")],
          [32, stream],
          [49, Buffer.from([2])],
        ]),
      ),
    ).toBe(false);
    expect(isTerminalCursor(`${cursorAt(2)}AAAA`)).toBe(false);
    for (const garbage of ["", "gai1_", "gai1_!!!", "cursor-o-end"]) expect(isTerminalCursor(garbage)).toBe(false);
  });

  it("reads the normative token vectors (fixtures/stream-session-v1/tokens.json) as the server writes them", () => {
    const vectors = JSON.parse(readFileSync(new URL("../../../fixtures/stream-session-v1/tokens.json", import.meta.url), "utf8")) as {
      valid: { name: string; kind: string; token: string; fields: { streamId?: string; event?: string; position?: string } }[];
    };
    expect(vectors.valid.map((v) => v.kind).sort()).toEqual(expect.arrayContaining(["cursor", "session", "stream"]));
    for (const vector of vectors.valid) {
      const expected = vector.fields.streamId?.replace(/-/g, "");
      expect(streamIdentityOf(vector.token), vector.name).toBe(expected);
      expect(isTerminalCursor(vector.token), vector.name).toBe(vector.kind === "cursor" && vector.fields.event === "terminal");
      // An item cursor's position (field 48); a terminal one, and every other kind, has none to read.
      const position = vector.kind === "cursor" && vector.fields.event === "item" ? BigInt(vector.fields.position ?? "") : undefined;
      expect(itemCursorPosition(vector.token), vector.name).toBe(position);
    }
    // Base64url of an impossible length (one character past a group) is no token.
    expect(streamIdentityOf("gai1_A")).toBeUndefined();
  });

  it("never reads past a truncated field", () => {
    const broken = Buffer.concat([Uint8Array.of(1, 3, 1), Buffer.from("k"), Uint8Array.of(32, 0, 0, 1, 0), new Uint8Array(40)]);
    expect(streamIdentityOf(`gai1_${broken.toString("base64url")}`)).toBeUndefined();
  });
});
