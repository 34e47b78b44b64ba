import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ProtocolError, canonicalJson } from "@golem-stream/wire";
import type { JsonObject, JsonValue } from "@golem-stream/wire";
import { decodeCheckpoint, encodeCheckpoint } from "../src/checkpoint/checkpoint.js";
import type { Checkpoint } from "../src/checkpoint/checkpoint.js";

interface ValidCase {
  name: string;
  description: string;
  checkpoint: JsonObject;
}
interface InvalidCase {
  name: string;
  description: string;
  code: string;
  path?: string;
  checkpoint?: JsonObject;
  text?: string;
}
const vectors = JSON.parse(readFileSync(new URL("./fixtures/checkpoint-v1.json", import.meta.url), "utf8")) as {
  valid: ValidCase[];
  invalid: InvalidCase[];
};

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("checkpoint v1 vectors", () => {
  it.each(vectors.valid.map((c) => [c.name, c] as const))("accepts %s and re-encodes it canonically", (_, c) => {
    const text = JSON.stringify(c.checkpoint, null, 2);
    const decoded = decodeCheckpoint(text);
    expect(encodeCheckpoint(decoded)).toBe(`${canonicalJson(c.checkpoint)}\n`);
  });

  it.each(vectors.invalid.map((c) => [c.name, c] as const))("refuses %s", (_, c) => {
    const input = c.text ?? JSON.stringify(c.checkpoint);
    const error = thrown(() => decodeCheckpoint(input));
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe(c.code);
    if (c.path !== undefined) expect((error as ProtocolError).path).toBe(c.path);
  });

  it("accepts the same document as bytes", () => {
    const c = vectors.valid[0]!;
    const bytes = new TextEncoder().encode(JSON.stringify(c.checkpoint));
    expect(encodeCheckpoint(decodeCheckpoint(bytes))).toBe(`${canonicalJson(c.checkpoint)}\n`);
  });
});

describe("checkpoint v1 hostile input", () => {
  const wrongTyped: unknown[] = [
    undefined,
    null,
    0,
    1n,
    true,
    {},
    [],
    Symbol("x"),
    () => "{}",
    new Uint16Array(4),
    "",
    "null",
    "1",
    '"text"',
    "{}",
    "[]",
    new Uint8Array([0xff, 0xfe]),
  ];
  it.each(
    wrongTyped.map(
      (v) =>
        [
          String(
            typeof v === "symbol"
              ? "symbol"
              : typeof v === "function"
                ? "function"
                : JSON.stringify(v, (_, x: unknown) => (typeof x === "bigint" ? `${x}n` : x)),
          ),
          v,
        ] as const,
    ),
  )("throws only ProtocolError for %s", (_, value) => {
    expect(thrown(() => decodeCheckpoint(value as string))).toBeInstanceOf(ProtocolError);
  });

  it.each(wrongTyped.map((v, i) => [i, v] as const))("encodeCheckpoint throws only ProtocolError for wrong-typed input #%i", (_, value) => {
    expect(thrown(() => encodeCheckpoint(value as Checkpoint))).toBeInstanceOf(ProtocolError);
  });

  it("encodeCheckpoint refuses a checkpoint with internal members smuggled in, or wrong-typed members", () => {
    const valid = decodeCheckpoint(JSON.stringify(vectors.valid[1]!.checkpoint));
    const broken: unknown[] = [
      { ...valid, sessionToken: 42 },
      { ...valid, outputCursors: "gai1_x" },
      { ...valid, outputCursors: [valid.sessionToken, valid.sessionToken] },
      { ...valid, selector: null },
      { ...valid, methodSchemaDigest: undefined },
      { ...valid, pending: { operation: "start" } },
    ];
    for (const checkpoint of broken) expect(thrown(() => encodeCheckpoint(checkpoint as Checkpoint))).toBeInstanceOf(ProtocolError);
  });

  it("bounds the input before parsing it", () => {
    const text = encodeCheckpoint(decodeCheckpoint(JSON.stringify(vectors.valid[1]!.checkpoint)));
    expect(decodeCheckpoint(text, { maxBytes: text.length })).toBeDefined();
    const error = thrown(() => decodeCheckpoint(`${text} `, { maxBytes: text.length }));
    expect((error as ProtocolError).code).toBe("limit-exceeded");
  });

  it("writes a checkpoint past 8 MiB, the size of a protocol message, and reads it back", () => {
    const base = vectors.valid[1]!.checkpoint;
    // A selector near the 8 MiB its start message may hold, and cursors beside it.
    const name = "n".repeat(8 * 1024 * 1024 - 4096);
    const checkpoint = {
      ...base,
      selector: { ...(base["selector"] as JsonObject), constructorParameters: { kind: "string", value: name } },
      outputCursors: Array.from({ length: 100 }, (_, i) => `gai1_${String(i).padStart(300, "c")}`),
    };
    const text = encodeCheckpoint(decodeCheckpoint(JSON.stringify(checkpoint)));
    expect(text.length).toBeGreaterThan(8 * 1024 * 1024);
    expect(decodeCheckpoint(text).selector.constructorParameters).toEqual({ kind: "string", value: name });
  });

  it("refuses nesting beyond the JSON depth limit inside a selector value", () => {
    const deep = "[".repeat(200) + "]".repeat(200);
    const base = vectors.valid[1]!.checkpoint;
    const text = JSON.stringify({
      ...base,
      selector: { ...(base["selector"] as JsonObject), constructorParameters: { kind: "list", value: "X" } },
    }).replace('"X"', deep);
    expect((thrown(() => decodeCheckpoint(text)) as ProtocolError).code).toBe("limit-exceeded");
  });

  it.each(["pending-takeover", "pending-start-config"])("throws only ProtocolError for any mutation of the %s vector", (name) => {
    const base = vectors.valid.find((c) => c.name === name)!.checkpoint;
    const text = canonicalJson(base);
    fc.assert(
      fc.property(fc.nat(text.length - 1), fc.string({ maxLength: 3 }), fc.nat(4), (at, insert, remove) => {
        const mutated = text.slice(0, at) + insert + text.slice(at + remove);
        try {
          decodeCheckpoint(mutated);
        } catch (error) {
          expect(error).toBeInstanceOf(ProtocolError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

const token = fc.stringMatching(/^gai1_[A-Za-z0-9_-]{1,60}$/);
const uuidV4 = fc.uuid({ version: 4 });
const nonEmpty = fc.string({ minLength: 1, maxLength: 20 });
const acceptedArbitrary: fc.Arbitrary<Checkpoint> = fc
  .record({
    selector: fc.record(
      {
        agentType: nonEmpty,
        application: nonEmpty,
        environment: nonEmpty,
        method: nonEmpty,
        constructorParameters: fc.record({ kind: fc.constant("string"), value: fc.string() as fc.Arbitrary<JsonValue> }),
        // Any version: protocol 2 makes only attempt ids and provisional references UUIDv4.
        phantomId: fc.uuid({ version: [1, 3, 4, 5, 6, 7, 8] }),
      },
      { requiredKeys: ["agentType", "application", "environment", "method", "constructorParameters"] },
    ),
    idempotencyKey: fc.string({ minLength: 1, maxLength: 40, unit: "grapheme" }),
    sessionToken: token,
    outputCursors: fc.uniqueArray(token, { maxLength: 5 }),
    methodSchemaDigest: fc.stringMatching(/^[0-9a-f]{64}$/),
    pending: fc.option(
      fc.record({
        operation: fc.constantFrom("resume" as const, "takeover" as const),
        attemptId: uuidV4,
        sessionToken: token,
        outputCursors: fc.uniqueArray(token, { maxLength: 4 }),
      }),
      { nil: undefined },
    ),
  })
  .map(({ pending, ...rest }) => (pending === undefined ? rest : { ...rest, pending }));

/** Saved before acceptance: no session token, no cursors, the frozen start with its provisional references. */
const pendingStartArbitrary: fc.Arbitrary<Checkpoint> = fc
  .record({
    checkpoint: acceptedArbitrary,
    attemptId: uuidV4,
    config: fc.array(
      fc.record({
        path: fc.array(nonEmpty, { minLength: 1, maxLength: 3 }),
        value: fc.oneof(fc.string(), fc.integer(), fc.boolean()) as fc.Arbitrary<JsonValue>,
      }),
      { maxLength: 3 },
    ),
    fields: fc.array(fc.oneof(fc.nat({ max: 1000 }), uuidV4), { maxLength: 5 }),
  })
  .filter(({ fields }) => new Set(fields).size === fields.length)
  .map(({ checkpoint, attemptId, config, fields }) => {
    const { sessionToken: _session, pending: _pending, outputCursors: _cursors, ...rest } = checkpoint;
    const leaves = fields.map((field) =>
      typeof field === "number" ? { kind: "u32", value: field } : { kind: "stream", value: { provisionalRef: field } },
    );
    return {
      ...rest,
      outputCursors: [],
      pending: { operation: "start" as const, attemptId, config, methodParameters: { kind: "record", value: { fields: leaves } } },
    };
  });

const checkpointArbitrary: fc.Arbitrary<Checkpoint> = fc.oneof(acceptedArbitrary, pendingStartArbitrary);

describe("checkpoint v1 properties", () => {
  it("decode(encode(c)) = c, and encoding is canonical", () => {
    fc.assert(
      fc.property(checkpointArbitrary, (checkpoint) => {
        const text = encodeCheckpoint(checkpoint);
        const decoded = decodeCheckpoint(text);
        expect(decoded).toEqual(checkpoint);
        expect(encodeCheckpoint(decoded)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it("member order and whitespace do not matter", () => {
    fc.assert(
      fc.property(checkpointArbitrary, (checkpoint) => {
        const text = encodeCheckpoint(checkpoint);
        const document = JSON.parse(text) as Record<string, unknown>;
        const reversed = Object.fromEntries(Object.entries(document).reverse());
        expect(decodeCheckpoint(JSON.stringify(reversed, null, 3))).toEqual(checkpoint);
      }),
      { numRuns: 100 },
    );
  });
});
