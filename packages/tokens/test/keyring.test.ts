/**
 * The keyring: its file format, its strictness, key rotation, and that no
 * way of printing or serialising it shows a secret except the one export
 * meant for that.
 */
import { inspect } from "node:util";
import { ProtocolError } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import { InvalidTokenError, KEYRING_FILE_VERSIONS, KEYRING_LIMITS, Keyring, mintToken, verifyToken } from "../src/index.js";
import { CURSOR_FIELDS, SESSION_FIELDS, STREAM_FIELDS, vectorFile } from "./support/fixtures.js";
import { SECRETS } from "./support/vectors.js";

const secret2025 = SECRETS["k-2025"]!.toString("base64url");
const secret2026 = SECRETS["k-2026"]!.toString("base64url");

function configError(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe("internal-error");
    return error as ProtocolError;
  }
  throw new Error("expected a configuration error");
}

describe("Keyring file", () => {
  it("round-trips through exportKeyringJson", () => {
    const keyring = Keyring.fromJSON(JSON.stringify(vectorFile.keyrings.after));
    const exported = keyring.exportKeyringJson();
    expect(JSON.parse(exported)).toStrictEqual(vectorFile.keyrings.after);
    const again = Keyring.fromJSON(exported);
    expect(again.activeKeyId).toBe("k-2026");
    expect(again.keyIds).toStrictEqual(["k-2026", "k-2025"]);
    const token = mintToken("session", SESSION_FIELDS, keyring);
    expect(verifyToken(token, "session", again).fields).toStrictEqual(SESSION_FIELDS);
  });

  it("accepts text, UTF-8 bytes or parsed JSON", () => {
    const text = JSON.stringify(vectorFile.keyrings.before);
    for (const input of [text, new TextEncoder().encode(text), JSON.parse(text)]) {
      expect(Keyring.fromJSON(input).activeKeyId).toBe("k-2025");
    }
  });

  const file = (change: Record<string, unknown>, keys?: unknown[]) =>
    JSON.stringify({
      version: 1,
      active: "k-2026",
      keys: keys ?? [
        { id: "k-2026", secret: secret2026 },
        { id: "k-2025", secret: secret2025, verifyOnly: true },
      ],
      ...change,
    });

  it.each([
    ["not JSON", "{"],
    ["a duplicate member", '{"version":1,"version":1,"active":"a","keys":[]}'],
    ["version 3", file({ version: 3 })],
    [
      "a staged key in a version 1 file",
      file({}, [
        { id: "k-2026", secret: secret2026 },
        { id: "k-2025", secret: secret2025, verifyOnly: true, staged: true },
      ]),
    ],
    [
      "a staged key without verifyOnly",
      file({ version: 2 }, [
        { id: "k-2026", secret: secret2026 },
        { id: "k-2025", secret: secret2025, staged: true },
      ]),
    ],
    ["the active key staged", file({ version: 2 }, [{ id: "k-2026", secret: secret2026, staged: true }])],
    [
      "staged false",
      file({ version: 2 }, [
        { id: "k-2026", secret: secret2026 },
        { id: "k-2025", secret: secret2025, verifyOnly: true, staged: false },
      ]),
    ],
    ["an unknown top-level member", file({ comment: "x" })],
    ["no keys", file({}, [])],
    ["an active id naming no key", file({ active: "k-2030" })],
    ["an unknown key member", file({}, [{ id: "k-2026", secret: secret2026, note: "x" }])],
    [
      "a non-active key without verifyOnly",
      file({}, [
        { id: "k-2026", secret: secret2026 },
        { id: "k-2025", secret: secret2025 },
      ]),
    ],
    ["the active key marked verifyOnly", file({}, [{ id: "k-2026", secret: secret2026, verifyOnly: true }])],
    ["verifyOnly false", file({}, [{ id: "k-2026", secret: secret2026, verifyOnly: false }])],
    [
      "duplicate key ids",
      file({}, [
        { id: "k-2026", secret: secret2026 },
        { id: "k-2026", secret: secret2025, verifyOnly: true },
      ]),
    ],
    ["an empty key id", file({ active: "" }, [{ id: "", secret: secret2026 }])],
    ["a 65-byte key id", file({ active: "k".repeat(65) }, [{ id: "k".repeat(65), secret: secret2026 }])],
    ["a padded secret", file({}, [{ id: "k-2026", secret: `${Buffer.alloc(32).toString("base64")}` }])],
    ["a secret in the standard alphabet", file({}, [{ id: "k-2026", secret: Buffer.alloc(33, 0xfb).toString("base64") }])],
    ["a 31-byte secret", file({}, [{ id: "k-2026", secret: Buffer.alloc(31, 1).toString("base64url") }])],
    ["a numeric secret", file({}, [{ id: "k-2026", secret: 12 }])],
  ])("rejects %s as internal-error", (_, text) => {
    const error = configError(() => Keyring.fromJSON(text));
    // Nothing from the file is echoed: not a secret, not a member name.
    expect(error.message).not.toContain(secret2026);
    expect(error.message).not.toContain(secret2025);
    expect(error.message).not.toContain("comment");
  });

  it(`rejects more than ${KEYRING_LIMITS.maxKeys} keys and files over 1 MiB`, () => {
    const keys = Array.from({ length: KEYRING_LIMITS.maxKeys + 1 }, (_, i) => ({
      id: `k${i}`,
      secret: secret2026,
      ...(i > 0 ? { verifyOnly: true } : {}),
    }));
    configError(() => Keyring.fromJSON(JSON.stringify({ version: 1, active: "k0", keys })));
    configError(() => Keyring.fromJSON(" ".repeat(KEYRING_LIMITS.maxFileBytes + 1)));
  });

  it("accepts the boundaries: a 64-byte key id, 32- and 1024-byte secrets", () => {
    const id = "é".repeat(32);
    const keyring = new Keyring({
      active: id,
      keys: [
        { id, secret: new Uint8Array(32) },
        { id: "long", secret: new Uint8Array(1024) },
      ],
    });
    expect(keyring.isVerifyOnly("long")).toBe(true);
    expect(verifyToken(mintToken("cursor", CURSOR_FIELDS, keyring), "cursor", keyring).keyId).toBe(id);
    configError(() => new Keyring({ active: "k", keys: [{ id: "k", secret: new Uint8Array(1025) }] }));
  });
});

describe("Keyring never shows a secret", () => {
  const keyring = Keyring.fromJSON(JSON.stringify(vectorFile.keyrings.after));
  const secretHex = [SECRETS["k-2025"]!.toString("hex"), SECRETS["k-2026"]!.toString("hex")];

  it.each([
    ["String()", () => String(keyring)],
    ["template literal", () => `${keyring}`],
    ["util.inspect", () => inspect(keyring, { depth: 10, showHidden: true })],
    ["util.inspect without custom inspectors", () => inspect(keyring, { depth: 10, showHidden: true, customInspect: false })],
    ["JSON.stringify", () => JSON.stringify(keyring)],
    ["JSON.stringify nested", () => JSON.stringify({ config: { keyring } })],
    ["Object.entries", () => JSON.stringify(Object.entries(keyring))],
    ["structuredClone", () => inspect(structuredClone({ ...keyring }), { depth: 10 })],
  ])("%s", (_, show) => {
    const shown = show();
    for (const secret of [secret2025, secret2026, ...secretHex]) expect(shown).not.toContain(secret);
    expect(shown).not.toContain("<Buffer");
    expect(shown).not.toMatch(/\b(?:iHash|oHash|Uint8Array|buffer)\b/);
  });

  it("JSON.stringify shows only the key ids", () => {
    expect(JSON.parse(JSON.stringify(keyring))).toStrictEqual({ active: "k-2026", keyIds: ["k-2026", "k-2025"], secrets: "<redacted>" });
  });

  it("copies secrets given as bytes, so the caller's buffer cannot change a key", () => {
    const bytes = new Uint8Array(32).fill(9);
    const mine = new Keyring({ active: "k", keys: [{ id: "k", secret: bytes }] });
    const token = mintToken("stream", STREAM_FIELDS, mine);
    bytes.fill(0);
    expect(verifyToken(token, "stream", mine).fields).toStrictEqual(STREAM_FIELDS);
  });
});

describe("generate and rotate", () => {
  it("generate makes a usable keyring with a random 32-byte secret", () => {
    const a = Keyring.generate();
    const b = Keyring.generate("first");
    expect(b.activeKeyId).toBe("first");
    expect(a.activeKeyId).not.toBe(Keyring.generate().activeKeyId);
    const secretOf = (keyring: Keyring) => (JSON.parse(keyring.exportKeyringJson()) as { keys: { secret: string }[] }).keys[0]!.secret;
    expect(Buffer.from(secretOf(a), "base64url")).toHaveLength(32);
    expect(secretOf(a)).not.toBe(secretOf(b));
    expect(verifyToken(mintToken("cursor", CURSOR_FIELDS, a), "cursor", a).keyId).toBe(a.activeKeyId);
  });

  it("rotate adds a new active key and keeps the old ones verify-only", () => {
    const old = Keyring.generate("k-old");
    const oldSession = mintToken("session", SESSION_FIELDS, old);
    const rotated = old.rotate("k-new");
    expect(rotated.activeKeyId).toBe("k-new");
    expect(rotated.isVerifyOnly("k-old")).toBe(true);
    expect(old.activeKeyId).toBe("k-old"); // keyrings are immutable
    expect(verifyToken(oldSession, "session", rotated).keyId).toBe("k-old");
    expect(verifyToken(mintToken("session", SESSION_FIELDS, rotated), "session", rotated).keyId).toBe("k-new");
    configError(() => rotated.rotate("k-old"));
  });

  it("withoutKey drops a verify-only key (its tokens stop verifying), never the active one", () => {
    const old = Keyring.generate("k-old");
    const oldSession = mintToken("session", SESSION_FIELDS, old);
    const rotated = old.rotate("k-new");
    const dropped = rotated.withoutKey("k-old");
    expect(dropped.keyIds).toEqual(["k-new"]);
    expect(dropped.activeKeyId).toBe("k-new");
    expect(rotated.has("k-old")).toBe(true); // keyrings are immutable
    expect(() => verifyToken(oldSession, "session", dropped)).toThrow(InvalidTokenError);
    expect(verifyToken(mintToken("session", SESSION_FIELDS, rotated), "session", dropped).keyId).toBe("k-new");
    configError(() => rotated.withoutKey("k-new"));
    configError(() => rotated.withoutKey("k-unknown"));
    for (const wrong of [undefined, null, 1, {}, ["k-old"]]) configError(() => rotated.withoutKey(wrong as never));
  });
});

describe("staged rotation: stage, then activate", () => {
  it("a staged key verifies tokens but never signs a session or cursor token", () => {
    const before = Keyring.generate("k-old");
    const staged = before.stage("k-new");
    expect(staged.activeKeyId).toBe("k-old");
    expect(staged.stagedKeyIds).toEqual(["k-new"]);
    expect(staged.keyIds.map((id) => [id, staged.roleOf(id)])).toEqual([
      ["k-old", "active"],
      ["k-new", "staged"],
    ]);
    expect(staged.isVerifyOnly("k-new")).toBe(true);
    expect(before.has("k-new")).toBe(false); // keyrings are immutable
    // New tokens keep the old key: a node that has not got the staged file yet still verifies them.
    for (const kind of ["session", "cursor"] as const) {
      const fields = kind === "session" ? SESSION_FIELDS : CURSOR_FIELDS;
      expect(verifyToken(mintToken(kind, fields, staged), kind, before).keyId).toBe("k-old");
      configError(() => mintToken(kind, fields, staged, { keyId: "k-new" }));
    }
    // What another node signs once it has activated the key verifies here.
    const activated = Keyring.fromJSON(staged.activate("k-new").exportKeyringJson());
    const fromActivatedNode = mintToken("session", SESSION_FIELDS, activated);
    expect(verifyToken(fromActivatedNode, "session", staged).keyId).toBe("k-new");
    expect(() => verifyToken(fromActivatedNode, "session", before)).toThrow(InvalidTokenError);
    // Stream tokens of a session pinned to it (field 24, at that node) are re-minted with it, unchanged.
    expect(mintToken("stream", STREAM_FIELDS, staged, { keyId: "k-new" })).toBe(
      mintToken("stream", STREAM_FIELDS, activated, { keyId: "k-new" }),
    );
  });

  it("activate makes the staged key the signing key and keeps the old one verify-only", () => {
    const staged = Keyring.generate("k-old").stage("k-new");
    const oldSession = mintToken("session", SESSION_FIELDS, staged);
    const activated = staged.activate("k-new");
    expect(activated.activeKeyId).toBe("k-new");
    expect(activated.stagedKeyIds).toEqual([]);
    expect(activated.keyIds.map((id) => [id, activated.roleOf(id)])).toEqual([
      ["k-old", "verify-only"],
      ["k-new", "active"],
    ]);
    expect(verifyToken(mintToken("session", SESSION_FIELDS, activated), "session", activated).keyId).toBe("k-new");
    expect(verifyToken(oldSession, "session", activated).keyId).toBe("k-old");
    // Rolling back is activating the old key again; either way no token stops verifying.
    const rolledBack = activated.activate("k-old");
    expect(rolledBack.activeKeyId).toBe("k-old");
    expect(rolledBack.roleOf("k-new")).toBe("verify-only");
    configError(() => activated.activate("k-new"));
    configError(() => activated.activate("k-unknown"));
    for (const wrong of [undefined, null, 1, {}]) configError(() => staged.activate(wrong as never));
  });

  it("stages one key at a time, keeps a staged key through rotate, and drops one", () => {
    const staged = Keyring.generate("k-old").stage("k-new");
    configError(() => staged.stage("k-other"));
    configError(() => staged.stage("k-old"));
    expect(staged.rotate("k-now").roleOf("k-new")).toBe("staged");
    expect(staged.withoutKey("k-new").keyIds).toEqual(["k-old"]);
    expect(staged.withoutKey("k-new").stage("k-other").stagedKeyIds).toEqual(["k-other"]);
    configError(() => new Keyring({ active: "a", keys: [{ id: "a", secret: new Uint8Array(32), staged: true }] }));
    configError(
      () =>
        new Keyring({
          active: "a",
          keys: [
            { id: "a", secret: new Uint8Array(32) },
            { id: "b", secret: new Uint8Array(32), staged: "yes" as never },
          ],
        }),
    );
  });

  it("the file: version 2 while a key is staged, version 1 otherwise, so earlier releases read it", () => {
    const staged = Keyring.generate("k-old").stage("k-new");
    const file = JSON.parse(staged.exportKeyringJson()) as { version: number; keys: Record<string, unknown>[] };
    expect(file.version).toBe(2);
    expect(file.keys.map(({ secret: _secret, ...key }) => key)).toEqual([{ id: "k-old" }, { id: "k-new", verifyOnly: true, staged: true }]);
    const again = Keyring.fromJSON(staged.exportKeyringJson());
    expect(again.stagedKeyIds).toEqual(["k-new"]);
    expect(again.exportKeyringJson()).toBe(staged.exportKeyringJson());
    expect((JSON.parse(again.activate("k-new").exportKeyringJson()) as { version: number }).version).toBe(1);
    // A version 2 file without a staged key is read too.
    const v2 = Keyring.fromJSON(JSON.stringify({ ...(vectorFile.keyrings.after as object), version: 2 }));
    expect(v2.keyIds.map((id) => v2.roleOf(id))).toEqual(["active", "verify-only"]);
    expect(v2.roleOf("k-1999")).toBeUndefined();
  });
});

describe("minting with a chosen key", () => {
  const keyring = Keyring.fromJSON(JSON.stringify(vectorFile.keyrings.after));

  it("lets stream tokens use a verify-only key (field 24)", () => {
    expect(verifyToken(mintToken("stream", STREAM_FIELDS, keyring, { keyId: "k-2025" }), "stream", keyring).keyId).toBe("k-2025");
  });

  it("refuses a non-active key for session and cursor tokens, and an unknown key for any", () => {
    configError(() => mintToken("session", SESSION_FIELDS, keyring, { keyId: "k-2025" }));
    configError(() => mintToken("cursor", CURSOR_FIELDS, keyring, { keyId: "k-2025" }));
    configError(() => mintToken("stream", STREAM_FIELDS, keyring, { keyId: "k-1999" }));
    expect(mintToken("session", SESSION_FIELDS, keyring, { keyId: "k-2026" })).toBe(mintToken("session", SESSION_FIELDS, keyring));
  });
});

describe("keyring bounds", () => {
  it("are frozen: no module can raise the number of keys, the file size or the file versions read", () => {
    const limits = KEYRING_LIMITS as unknown as Record<string, number>;
    const before = { ...limits };
    const writes = [
      () => (limits["maxKeys"] = 1e9),
      () => (limits["maxFileBytes"] = Number.POSITIVE_INFINITY),
      () => (KEYRING_FILE_VERSIONS as unknown as number[]).push(3),
    ];
    try {
      // Modules are strict code: each write to a frozen object throws.
      for (const write of writes) expect(write).toThrow(TypeError);
    } finally {
      if (!Object.isFrozen(limits)) Object.assign(limits, before);
    }
    expect(KEYRING_LIMITS.maxKeys).toBe(256);
    expect(KEYRING_FILE_VERSIONS).toEqual([1, 2]);
    const keys = Array.from({ length: 257 }, (_, i) => ({ id: `k${i}`, secret: new Uint8Array(32) }));
    configError(() => new Keyring({ active: "k0", keys }));
    configError(() => Keyring.fromJSON(" ".repeat(1024 * 1024 + 1)));
  });
});
