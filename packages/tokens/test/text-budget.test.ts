/**
 * `textFieldBudget` is what a server sizes its limits from (issuer,
 * audience, caller identity, selector names): it must be exactly the room
 * the layout leaves, so free text within it always mints and one byte more,
 * with everything else at its largest, does not.
 */
import { describe, expect, it } from "vitest";
import { Keyring, TokenTooLongError, mintToken, textFieldBudget, type TokenFields, type TokenKind } from "../src/index.js";
import { CURSOR_FIELDS, SESSION_FIELDS, STREAM_FIELDS } from "./support/fixtures.js";

const KEY_ID = "k".repeat(64);
const keyring = Keyring.generate(KEY_ID);
const U64_MAX = (1n << 64n) - 1n;

/** Every bounded field at its largest; `fill` bytes of free text spread over the kind's text fields. */
function largest<K extends TokenKind>(kind: K, fill: number): TokenFields<K> {
  const common = { issuer: "i", audience: "a", account: "c", principal: "p", issuedAt: U64_MAX };
  if (kind === "session") {
    const fields = {
      ...SESSION_FIELDS,
      ...common,
      application: "a",
      environment: "e",
      agentType: "t",
      generation: U64_MAX,
      idempotencyKey: "q".repeat(1024),
      streamKeyId: KEY_ID,
    };
    return { ...fields, method: "m".repeat(fill - 7) } as TokenFields<K>;
  }
  if (kind === "stream") return { ...STREAM_FIELDS, ...common, coordinate: "/".repeat(fill - 4) } as TokenFields<K>;
  // A two-byte character where one byte is left over keeps multi-byte text counted in bytes.
  return {
    ...CURSOR_FIELDS,
    ...common,
    position: U64_MAX,
    principal: "é".repeat((fill - 3) >> 1) + "p".repeat((fill - 3) & 1),
  } as TokenFields<K>;
}

describe("textFieldBudget", () => {
  it("is the sum written in text-budget.ts for each kind", () => {
    expect([textFieldBudget("session"), textFieldBudget("stream"), textFieldBudget("cursor")]).toEqual([4787, 5879, 5940]);
  });

  it.each(["session", "stream", "cursor"] as const)(
    "%s: free text within it mints a token of at most 8192 characters, one byte more is TokenTooLongError",
    (kind) => {
      const budget = textFieldBudget(kind);
      expect(mintToken(kind, largest(kind, budget), keyring)).toHaveLength(8192);
      expect(() => mintToken(kind, largest(kind, budget + 1), keyring)).toThrow(TokenTooLongError);
    },
  );
});
