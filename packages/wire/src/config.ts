/**
 * Configuration entries of an invocationStart (protocol section 4.2). Values
 * are application JSON, not SchemaValues, so the only rule this layer can
 * apply to them is the one the protocol states: no stream references.
 */
import { type Codec, arrayCodec, elementPath, invalidAt, limitAt, memberPath, objectCodec, required } from "./codec.js";
import { nameCodec } from "./fields.js";
import { type JsonValue, getMember } from "./json.js";
import { LIMITS } from "./limits.js";
import type { ConfigEntry } from "./messages.js";

const pathCodec: Codec<readonly string[]> = arrayCodec(nameCodec, {
  min: 1,
  max: LIMITS.maxConfigPathSegments,
});

/**
 * Any JSON value without a stream reference. A stream reference is the
 * SchemaValue stream leaf's shape: an object with exactly `kind` = "stream"
 * and an object `value` (section 3.2). Depth is bounded so that a value built
 * in memory (never a parsed one, which strict JSON already bounds) cannot
 * exhaust the stack.
 */
const configValueCodec: Codec<JsonValue> = {
  decode(json, at) {
    rejectStreamReferences(json, at);
    return json;
  },
  encode(value, at) {
    rejectStreamReferences(value, at);
    return value as JsonValue;
  },
};

function rejectStreamReferences(value: unknown, at: string): void {
  const found = findStreamReference(value, 0);
  if (found === null) return;
  if (found === TOO_DEEP) throw limitAt(at, `nests deeper than ${LIMITS.maxJsonDepth}`);
  if (found === TOO_LARGE) throw limitAt(at, `holds more JSON than a message of ${LIMITS.maxTextMessageBytes} bytes can`);
  const where = found.reduceRight<string>((path, key) => (typeof key === "number" ? elementPath(path, key) : memberPath(path, key)), at);
  throw invalidAt(where, "must not contain a stream reference");
}

const TOO_DEEP: (string | number)[] = [];
const TOO_LARGE: (string | number)[] = [];

/**
 * Values the walk below may still visit in the configuration being checked.
 * Each value it visits is at least one character of the message's text, so
 * more values than the text limit has bytes cannot be sent; and a value built
 * in memory may reference one object many times (a DAG), which a walk would
 * visit once per reference: 40 levels of `[x, x]` are 2^40 visits. Set for
 * each configuration by `configCodec` (saved and restored, so a getter that
 * encodes another message cannot lend it more).
 */
let visitsLeft = Number.POSITIVE_INFINITY;

/**
 * The path (innermost key first) to the first stream reference in `value`,
 * `TOO_DEEP`, `TOO_LARGE`, or null. Paths are built only on the way out of a
 * find, so a clean value costs no allocation.
 */
function findStreamReference(value: unknown, depth: number): (string | number)[] | null {
  if (--visitsLeft < 0) return TOO_LARGE;
  if (typeof value !== "object" || value === null) return null;
  if (depth >= LIMITS.maxJsonDepth) return TOO_DEEP;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = findStreamReference(value[index], depth + 1);
      if (found !== null) return found === TOO_DEEP || found === TOO_LARGE ? found : (found.push(index), found);
    }
    return null;
  }
  const object = value as Readonly<Record<string, JsonValue>>;
  const names = Object.keys(object);
  if (names.length === 2 && getMember(object, "kind") === "stream") {
    const inner = getMember(object, "value");
    if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) return [];
  }
  for (const name of names) {
    const found = findStreamReference(object[name], depth + 1);
    if (found !== null) return found === TOO_DEEP || found === TOO_LARGE ? found : (found.push(name), found);
  }
  return null;
}

const configEntryCodec = objectCodec<ConfigEntry>("a configuration entry", {
  path: required(pathCodec),
  value: required(configValueCodec),
});

const entriesCodec = arrayCodec(configEntryCodec, { max: LIMITS.maxConfigEntries }, (entries, at) => {
  if (entries.length < 2) return;
  // Two values for one path would make the configuration ambiguous, as a
  // duplicate member name makes an object ambiguous (section 2).
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    const key = JSON.stringify(entry.path);
    if (seen.has(key)) throw invalidAt(memberPath(elementPath(at, index), "path"), "repeats the path of an earlier entry");
    seen.add(key);
  });
});

/** At most 256 entries, each naming a distinct path, their values together visited at most once per byte of the text limit. */
export const configCodec: Codec<readonly ConfigEntry[]> = {
  decode: (json, at) => withVisitBudget(() => entriesCodec.decode(json, at)),
  encode: (value, at) => withVisitBudget(() => entriesCodec.encode(value, at)),
};

function withVisitBudget<T>(run: () => T): T {
  const outer = visitsLeft;
  visitsLeft = LIMITS.maxTextMessageBytes;
  try {
    return run();
  } finally {
    visitsLeft = outer;
  }
}
