/**
 * Wrong-typed input fed to every public function (the noble-hashes habit):
 * each fails with a ProtocolError carrying a stable code — `invalid-token`
 * for a token (hostile input), `internal-error` for the caller's own
 * mistakes — and never with a TypeError from deep inside.
 */
import { ProtocolError } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import {
  Keyring,
  assertTokenIdentity,
  cursorMinter,
  inspectToken,
  mintToken,
  refreshedSessionFields,
  sha256Hex,
  streamTokenKeyId,
  textFieldBudget,
  TokenTooLongError,
  verifyToken,
  type CursorEvent,
  type CursorStreamFields,
  type SessionTokenFields,
  type TokenKind,
} from "../src/index.js";
import { SESSION_FIELDS, STREAM_FIELDS, keyringBefore } from "./support/fixtures.js";

const WRONG: readonly [string, unknown][] = [
  ["undefined", undefined],
  ["null", null],
  ["a number", 42],
  ["NaN", Number.NaN],
  ["a bigint", 7n],
  ["a boolean", true],
  ["a symbol", Symbol("x")],
  ["a function", () => "gai1_"],
  ["an array", ["gai1_"]],
  ["a plain object", { token: "gai1_" }],
  ["bytes", new Uint8Array([1, 2, 3])],
  ["a String object", new String("gai1_AAAA")],
  // Converted to a string for a key lookup, it throws; looked up, "toString" is found on the prototype.
  ["an object without a prototype", Object.create(null) as object],
  ["an inherited member's name", "toString"],
  // Every trap throws: a getter of the caller's that fails while the function reads the argument.
  ["a proxy whose every trap throws", hostileProxy()],
];

function hostileProxy(): object {
  const fail = (): never => {
    throw new Error("trap");
  };
  return new Proxy({}, { get: fail, has: fail, ownKeys: fail, getPrototypeOf: fail, getOwnPropertyDescriptor: fail });
}

const keyring = keyringBefore();
const validToken = mintToken("session", SESSION_FIELDS, keyring);
const verifiedSession = verifyToken(validToken, "session", keyring);
const { issuer, audience, account, principal, sessionId } = SESSION_FIELDS;
const CURSOR_STREAM: CursorStreamFields = { issuer, audience, account, principal, sessionId, streamId: sessionId };
const minter = cursorMinter(keyring, CURSOR_STREAM);

/**
 * Every public function with one argument replaced by the wrong value, the
 * code it must fail with, and the labels of WRONG that are in fact valid for
 * that argument (bytes are a valid sha256Hex input, any object a valid
 * options bag, ...).
 */
const CALLS: readonly [string, "invalid-token" | "internal-error", (wrong: unknown) => unknown, readonly string[]][] = [
  ["verifyToken(token)", "invalid-token", (w) => verifyToken(w as string, "session", keyring), []],
  ["verifyToken(expectedKind)", "internal-error", (w) => verifyToken(validToken, w as "session", keyring), []],
  ["verifyToken(keyring)", "internal-error", (w) => verifyToken(validToken, "session", w as Keyring), []],
  ["inspectToken(token)", "invalid-token", (w) => inspectToken(w as string), []],
  ["mintToken(kind)", "internal-error", (w) => mintToken(w as "session", SESSION_FIELDS, keyring), []],
  ["mintToken(fields)", "internal-error", (w) => mintToken("session", w as SessionTokenFields, keyring), []],
  ["mintToken(keyring)", "internal-error", (w) => mintToken("session", SESSION_FIELDS, w as Keyring), []],
  [
    "mintToken(options)",
    "internal-error",
    (w) => mintToken("session", SESSION_FIELDS, keyring, w as {}),
    ["undefined", "a function", "an array", "a plain object", "bytes", "a String object", "an object without a prototype"],
  ],
  [
    "streamTokenKeyId(sessionFields)",
    "internal-error",
    (w) => streamTokenKeyId(w as SessionTokenFields, "k"),
    // Only field 24 is read: any object without it falls back to the key id, as documented.
    ["a function", "an array", "a plain object", "bytes", "a String object", "an object without a prototype"],
  ],
  [
    "streamTokenKeyId(sessionTokenKeyId)",
    "internal-error",
    (w) => streamTokenKeyId({ ...SESSION_FIELDS, streamKeyId: undefined }, w as string),
    ["an inherited member's name"],
  ],
  [
    "refreshedSessionFields(previous)",
    "internal-error",
    (w) => refreshedSessionFields(w as typeof verifiedSession, { generation: 2n, issuedAt: 1n }),
    [],
  ],
  [
    "refreshedSessionFields(changes)",
    "internal-error",
    (w) => refreshedSessionFields(verifiedSession, w as { generation: bigint; issuedAt: bigint }),
    [],
  ],
  ["new Keyring(init)", "internal-error", (w) => new Keyring(w as ConstructorParameters<typeof Keyring>[0]), []],
  [
    "new Keyring({ active })",
    "internal-error",
    (w) => new Keyring({ active: w as string, keys: [{ id: "k", secret: new Uint8Array(32) }] }),
    [],
  ],
  ["new Keyring({ keys })", "internal-error", (w) => new Keyring({ active: "k", keys: w as [] }), []],
  ["new Keyring({ keys: [key] })", "internal-error", (w) => new Keyring({ active: "k", keys: [w as { id: string; secret: string }] }), []],
  [
    "new Keyring({ keys: [{ id }] })",
    "internal-error",
    (w) => new Keyring({ active: "k", keys: [{ id: w as string, secret: new Uint8Array(32) }] }),
    [],
  ],
  [
    "new Keyring({ keys: [{ secret }] })",
    "internal-error",
    (w) => new Keyring({ active: "k", keys: [{ id: "k", secret: w as string }] }),
    [],
  ],
  ["Keyring.fromJSON(input)", "internal-error", (w) => Keyring.fromJSON(w as string), []],
  ["sha256Hex(input)", "internal-error", (w) => sha256Hex(w as string), ["bytes", "an inherited member's name"]],
  ["assertTokenIdentity(fields)", "internal-error", (w) => assertTokenIdentity(w as typeof STREAM_FIELDS, { issuer: "x" }), []],
  [
    "assertTokenIdentity(expected)",
    "internal-error",
    (w) => assertTokenIdentity(STREAM_FIELDS, w as {}),
    ["a function", "an array", "a plain object", "bytes", "a String object", "an object without a prototype"],
  ],
  ["cursorMinter(keyring)", "internal-error", (w) => cursorMinter(w as Keyring, CURSOR_STREAM), []],
  ["cursorMinter(fields)", "internal-error", (w) => cursorMinter(keyring, w as CursorStreamFields), []],
  ["cursorMinter().mint(issuedAt)", "internal-error", (w) => minter.mint(w as bigint, 0n, "item"), ["a bigint"]],
  ["cursorMinter().mint(position)", "internal-error", (w) => minter.mint(0n, w as bigint, "item"), ["a bigint"]],
  ["cursorMinter().mint(event)", "internal-error", (w) => minter.mint(0n, 0n, w as CursorEvent), []],
  ["textFieldBudget(kind)", "internal-error", (w) => textFieldBudget(w as TokenKind), []],
];

describe.each(CALLS)("%s with a wrong-typed argument", (_name, code, call, accepts) => {
  it.each(WRONG)(`fails with ${code} for %s`, (label, wrong) => {
    let caught: unknown;
    try {
      call(wrong);
    } catch (error) {
      caught = error;
    }
    if (accepts.includes(label)) {
      // Valid for this argument: returning is fine; throwing anything but a ProtocolError is not.
      expect(caught === undefined || caught instanceof ProtocolError).toBe(true);
      return;
    }
    expect(caught).toBeInstanceOf(ProtocolError);
    expect((caught as ProtocolError).code).toBe(code);
  });
});

describe("an error thrown by the caller's own object while it is read", () => {
  it("is the caller's internal-error, with the original error as its cause", () => {
    const boom = new Error("boom");
    const fields = Object.defineProperty({ ...SESSION_FIELDS }, "issuer", {
      enumerable: true,
      get() {
        throw boom;
      },
    });
    for (const call of [
      () => mintToken("session", fields, keyring),
      () =>
        cursorMinter(keyring, {
          ...CURSOR_STREAM,
          get issuer(): string {
            throw boom;
          },
        }),
      () => assertTokenIdentity(fields, { issuer: "x" }),
    ]) {
      let caught: unknown;
      try {
        call();
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ProtocolError);
      expect(caught).toMatchObject({ code: "internal-error", cause: boom });
    }
  });
});

describe("mintToken field checks", () => {
  const cases: readonly [string, Record<string, unknown>, string][] = [
    ["a number where a bigint belongs", { issuedAt: 5 }, "fields.issuedAt"],
    ["a negative u64", { generation: -1n }, "fields.generation"],
    ["a u64 above 2^64-1", { generation: 1n << 64n }, "fields.generation"],
    ["an upper-case UUID", { sessionId: "6F1C2D3E-4B5A-4C6D-8E7F-9A0B1C2D3E4F" }, "fields.sessionId"],
    ["a UUID without hyphens", { sessionId: "6f1c2d3e4b5a4c6d8e7f9a0b1c2d3e4f" }, "fields.sessionId"],
    ["empty text", { issuer: "" }, "fields.issuer"],
    ["a lone surrogate", { principal: "user:\ud800" }, "fields.principal"],
    [
      "a digest in upper case",
      { agentIdentity: "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08" },
      "fields.agentIdentity",
    ],
    ["a digest of the wrong length", { agentIdentity: "abc" }, "fields.agentIdentity"],
    ["an idempotency key over 1 KiB", { idempotencyKey: "é".repeat(513) }, "fields.idempotencyKey"],
    ["a stream key id over 64 bytes", { streamKeyId: "k".repeat(65) }, "fields.streamKeyId"],
    ["a missing required field", { method: undefined }, "fields.method"],
    ["a member no session token has", { direction: "input" }, "fields.direction"],
  ];

  it.each(cases)("rejects %s as internal-error naming the field, not the value", (_, change, path) => {
    const fields = { ...SESSION_FIELDS, ...change } as SessionTokenFields;
    try {
      mintToken("session", fields, keyring);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).code).toBe("internal-error");
      expect((error as ProtocolError).path).toBe(path);
      for (const value of Object.values(change)) {
        if (typeof value === "string" && value.length > 3) expect((error as ProtocolError).message).not.toContain(value);
      }
    }
  });

  it("rejects an unknown direction or event name", () => {
    expect(() => mintToken("stream", { ...STREAM_FIELDS, direction: "sideways" as "input" }, keyring)).toThrow(/direction/);
  });

  it("accepts the largest token that still verifies", () => {
    // 8192 characters hold 6140 decoded bytes; fill the coordinate up to exactly that.
    const base = mintToken("stream", { ...STREAM_FIELDS, coordinate: "x" }, keyring);
    const baseBytes = Buffer.from(base.slice(5), "base64url").length;
    const coordinate = "x".repeat(1 + 6140 - baseBytes);
    const largest = mintToken("stream", { ...STREAM_FIELDS, coordinate }, keyring);
    expect(largest.length).toBe(8192);
    expect(verifyToken(largest, "stream", keyring).fields.coordinate).toBe(coordinate);
    expect(() => mintToken("stream", { ...STREAM_FIELDS, coordinate: `${coordinate}x` }, keyring)).toThrow(ProtocolError);
  });
});

describe("sha256Hex", () => {
  // FIPS 180-2 appendix B.1 ("abc") and the empty message.
  it("hashes bytes and UTF-8 text to lower-case hex", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex(new Uint8Array(0))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("é")).toBe(sha256Hex(Uint8Array.of(0xc3, 0xa9)));
  });

  it("refuses text with a lone surrogate instead of hashing a replacement character", () => {
    expect(() => sha256Hex("\udc00")).toThrow(ProtocolError);
  });
});

describe("mintToken with fields too long together", () => {
  it("throws TokenTooLongError: limit-exceeded, not retryable, close 1002, naming the kind and the length but no value", () => {
    for (const length of [6000, 7000]) {
      let caught: unknown;
      try {
        mintToken("session", { ...SESSION_FIELDS, method: "m".repeat(length) } as SessionTokenFields, keyring);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(TokenTooLongError);
      const error = caught as TokenTooLongError;
      expect([error.code, error.retryable, error.closeCode, error.kind, error.path]).toEqual([
        "limit-exceeded",
        false,
        1002,
        "session",
        "fields",
      ]);
      expect(error.characters).toBeGreaterThan(8192);
      expect(error.message).toBe(`the session token would be ${error.characters} characters long, over the limit of 8192`);
    }
  });

  it("mints up to 8192 characters; one byte more is refused, with the length it would have had", () => {
    let longest = "";
    let refused: TokenTooLongError | undefined;
    for (let length = 5000; refused === undefined; length++) {
      try {
        longest = mintToken("session", { ...SESSION_FIELDS, method: "m".repeat(length) } as SessionTokenFields, keyring);
      } catch (error) {
        refused = error as TokenTooLongError;
      }
    }
    expect(longest.length).toBeGreaterThan(8189);
    expect(longest.length).toBeLessThanOrEqual(8192);
    expect(refused).toBeInstanceOf(TokenTooLongError);
    expect(refused.characters).toBeGreaterThan(8192);
    expect(refused.characters).toBeLessThanOrEqual(longest.length + 2);
  });
});
