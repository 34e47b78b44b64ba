#!/usr/bin/env node
/**
 * Writes the wire conformance vectors of fixtures/stream-session-v1/:
 * json-messages.json, binary-messages.json and malformed.json.
 *
 * This writer is deliberately independent of @golem-stream/wire: it has its
 * own canonical JSON serialiser and builds envelopes by hand, so the tests
 * that check the package against these files check two implementations
 * against each other. Published vectors are frozen (protocol section 14):
 * add cases, never change one.
 *
 *   node packages/wire/scripts/write-vectors.mjs [out-dir/]
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// The fixtures directory, or another one given as the first argument (the tests use one to check
// that the committed files are exactly what this writer produces).
const outDir = process.argv[2] ?? fileURLToPath(new URL("../../../fixtures/stream-session-v1/", import.meta.url));

// ---- an independent canonical JSON writer (protocol section 2) ----

function codePoints(text) {
  return Array.from(text, (char) => char.codePointAt(0));
}

function byCodePoint(a, b) {
  const x = codePoints(a);
  const y = codePoints(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

function canon(value) {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error("not JSON");
    return JSON.stringify(value);
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canon).join(",")}]`;
  const names = Object.keys(value)
    .filter((name) => value[name] !== undefined)
    .sort(byCodePoint);
  return `{${names.map((name) => `${JSON.stringify(name)}:${canon(value[name])}`).join(",")}}`;
}

// ---- building blocks ----

const ATTEMPT = "ca7e5a82-2064-4c18-8359-806145c1562f";
const RESUME_ATTEMPT = "47be00cd-78aa-4e41-a41d-2517060e540e";
const PROVISIONAL = "0dff1c71-f12f-4bb1-996c-23d693bdc825";
const PROVISIONAL_2 = "5f0c3a52-8d7e-4e0b-a1c3-9b2f6d4e8a10";
const PHANTOM = "994df72a-ebc7-40e0-a8ef-c9ce258f3da7";
const U64_MAX = "18446744073709551615";

/** A deterministic stand-in for an opaque `gai1_` token (wire never verifies tokens). */
function token(label, length = 120) {
  let text = "gai1_";
  for (let i = 0; text.length < length; i++) {
    text += createHash("sha256").update(`${label}/${i}`).digest("base64url");
  }
  return text.slice(0, length);
}

const SESSION = token("session", 200);
const STREAM_IN = token("stream-in");
const STREAM_IN_2 = token("stream-in-2");
const STREAM_OUT = token("stream-out");
const CURSOR = token("cursor", 200);
const CURSOR_2 = token("cursor-2", 200);

const sv = (kind, value) => ({ kind, value });
const record = (...fields) => sv("record", { fields });
const provisional = (ref) => sv("stream", { provisionalRef: ref });

const selector = {
  agentType: "media",
  application: "demo",
  constructorParameters: record(sv("string", "encoder")),
  environment: "default",
  method: "transcode",
};

const inputMapping = (channel, streamToken, sequence = "0", extra = {}) => ({
  channel,
  direction: "input",
  inputHighWater: { sequence, terminal: false },
  streamToken,
  ...extra,
});
const outputMapping = (channel, streamToken) => ({ channel, direction: "output", streamToken });

/** Valid base messages (wire form), one per variant; malformed cases mutate copies. */
const base = {
  invocationStart: {
    attemptId: ATTEMPT,
    config: [],
    idempotencyKey: "upload-42",
    methodParameters: record(provisional(PROVISIONAL)),
    selector,
    type: "invocationStart",
    version: 1,
  },
  resumeAttach: {
    attemptId: RESUME_ATTEMPT,
    operation: "resume",
    outputCursors: [CURSOR],
    sessionToken: SESSION,
    type: "resumeAttach",
    version: 1,
  },
  inputStreamItem: { channel: 1, sequence: "0", type: "inputStreamItem", value: record(sv("string", "ready")), version: 1 },
  inputStreamEnd: { channel: 1, sequence: "1", type: "inputStreamEnd", version: 1 },
  clientStreamCancel: { channel: 2, reason: "consumer-drop", type: "streamCancel", version: 1 },
  invocationAccepted: {
    attemptId: ATTEMPT,
    idempotencyKey: "upload-42",
    mappings: [inputMapping(1, STREAM_IN, "0", { provisionalRef: PROVISIONAL }), outputMapping(2, STREAM_OUT)],
    sessionToken: SESSION,
    type: "invocationAccepted",
    version: 1,
  },
  invocationRejected: {
    attemptId: ATTEMPT,
    code: "validation-error",
    message: "method parameters do not match the selected method",
    retryable: false,
    type: "invocationRejected",
    version: 1,
  },
  invocationResult: {
    mappings: [],
    result: { graph: { root: { kind: "bool", value: {} } }, kind: "value", value: sv("bool", true) },
    type: "invocationResult",
    version: 1,
  },
  outputStreamItem: {
    channel: 2,
    cursorToken: CURSOR,
    mappings: [],
    sequence: "0",
    type: "outputStreamItem",
    value: record(sv("string", "ready")),
    version: 1,
  },
  outputStreamEnd: {
    channel: 2,
    cursorToken: CURSOR,
    outcome: { kind: "ok" },
    sequence: "1",
    type: "outputStreamEnd",
    version: 1,
  },
  inputStreamAck: {
    channel: 1,
    highestContiguousSequence: "1",
    mappings: [],
    terminal: false,
    type: "inputStreamAck",
    version: 1,
  },
  serverStreamCancel: { channel: 1, reason: "consumer-drop", type: "streamCancel", version: 1 },
  attachmentRevoked: { reason: "replaced", type: "attachmentRevoked", version: 1 },
  invocationFinished: { outcome: { kind: "success" }, type: "invocationFinished", version: 1 },
};

const clone = (value) => structuredClone(value);
/** A copy of `message` changed by `change` (which may mutate its argument). */
function mutate(message, change) {
  const copy = clone(message);
  change(copy);
  return copy;
}

const hex = (bytes) => Buffer.from(bytes).toString("hex");
const utf8 = (text) => Buffer.from(text, "utf8");

/** The envelope of section 7; metadata given as text or as raw bytes. */
function envelope(metadataText, payload) {
  const metadata = typeof metadataText === "string" ? utf8(metadataText) : metadataText;
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(metadata.length);
  return Buffer.concat([prefix, metadata, Buffer.from(payload)]);
}

// ---- json-messages.json ----

const jsonCases = [];
function valid(name, description, direction, message) {
  const decoded = clone(message);
  delete decoded.version;
  jsonCases.push({ name, description, direction, text: canon(message), decoded });
}

valid("invocation-start", "The start of protocol section 5.1: empty config, one provisional input stream.", "client", base.invocationStart);
valid(
  "invocation-start-full",
  "A start with a phantom id, configuration entries and a non-ASCII idempotency key.",
  "client",
  mutate(base.invocationStart, (m) => {
    m.selector.phantomId = PHANTOM;
    m.idempotencyKey = "téléversement-42-\u{1F4E6}";
    m.config = [
      { path: ["provider", "model"], value: "gpt-5" },
      { path: ["limits"], value: { burst: 10, ratio: 0.25, regions: ["eu", "us"], strict: true, fallback: null } },
    ];
    m.methodParameters = record(provisional(PROVISIONAL), provisional(PROVISIONAL_2), sv("u64", U64_MAX));
  }),
);
valid(
  "invocation-start-code-point-order",
  "Config value members sort by code point: Z < a < é < U+E000 < U+FFFF < U+1F600 (a UTF-16 sort would put U+1F600 before U+E000).",
  "client",
  mutate(base.invocationStart, (m) => {
    m.config = [{ path: ["labels"], value: { "\u{1F600}": 5, "\uE000": 4, é: 3, a: 2, Z: 1, "\uFFFF": 4.5 } }];
  }),
);
valid(
  "invocation-start-escaping",
  "Strings escape only what JSON requires: quote, backslash and control characters; short forms where JSON has them, else lower-case \\u00xx; / DEL U+2028 and astral characters stay literal.",
  "client",
  mutate(base.invocationStart, (m) => {
    m.config = [
      {
        path: ["text"],
        value: 'quote" backslash\\ slash/ nul\u0000 bs\b ff\f nl\n cr\r tab\t us\u001f del\u007f ls\u2028 ps\u2029 astral\u{10FFFF}',
      },
    ];
  }),
);
valid(
  "invocation-start-config-lookalike",
  "Config values that resemble but are not stream references are application JSON and pass: value not an object, or a third member.",
  "client",
  mutate(base.invocationStart, (m) => {
    m.config = [
      { path: ["a"], value: { kind: "stream", value: "not-a-reference" } },
      { path: ["b"], value: { kind: "stream", value: { streamToken: "x" }, note: 1 } },
      { path: ["c"], value: [{ kind: "stream" }] },
    ];
  }),
);
valid(
  "invocation-start-idempotency-key-1kib",
  "An idempotency key of exactly 1024 UTF-8 bytes (341 three-byte characters and one ASCII letter) is accepted.",
  "client",
  mutate(base.invocationStart, (m) => {
    m.idempotencyKey = `${"€".repeat(341)}k`;
  }),
);
valid(
  "invocation-start-proto-member",
  "A member named __proto__ inside a SchemaValue or config value is ordinary data.",
  "client",
  mutate(base.invocationStart, (m) => {
    m.config = [{ path: ["__proto__"], value: JSON.parse('{"__proto__":1}') }];
  }),
);
valid("resume-attach", "The resume of protocol section 5.2 with one output cursor.", "client", base.resumeAttach);
valid(
  "resume-attach-takeover-no-cursors",
  "A takeover with no output cursors: every output replays from sequence 0.",
  "client",
  mutate(base.resumeAttach, (m) => {
    m.operation = "takeover";
    m.outputCursors = [];
  }),
);
valid(
  "resume-attach-two-cursors",
  "A resume with two distinct cursors.",
  "client",
  mutate(base.resumeAttach, (m) => {
    m.outputCursors = [CURSOR, CURSOR_2];
  }),
);
valid("input-stream-item", "The input item of protocol section 5.3.", "client", base.inputStreamItem);
valid(
  "input-stream-item-nested-stream",
  "An input item whose value introduces a nested input stream by provisional reference.",
  "client",
  mutate(base.inputStreamItem, (m) => {
    m.sequence = "7";
    m.value = record(sv("string", "group"), provisional(PROVISIONAL_2));
  }),
);
valid(
  "input-stream-item-last-sequence",
  "The largest item sequence: 2^64 - 2, so that sequence + 1 still fits a u64.",
  "client",
  mutate(base.inputStreamItem, (m) => {
    m.channel = 4294967295;
    m.sequence = "18446744073709551614";
  }),
);
valid("input-stream-end", "The input end of protocol section 5.4.", "client", base.inputStreamEnd);
valid(
  "input-stream-end-u64-max",
  "An input end after 2^64 - 1 items.",
  "client",
  mutate(base.inputStreamEnd, (m) => {
    m.sequence = U64_MAX;
  }),
);
for (const reason of ["cancelled", "consumer-drop", "source-unavailable"]) {
  valid(
    `client-stream-cancel-${reason}`,
    `A client cancel with reason ${reason}.`,
    "client",
    mutate(base.clientStreamCancel, (m) => {
      m.reason = reason;
    }),
  );
}
valid(
  "invocation-accepted",
  "An acceptance with one input mapping (resolving a provisional reference) and one output mapping.",
  "server",
  base.invocationAccepted,
);
valid(
  "invocation-accepted-no-mappings",
  "The acceptance of protocol section 6.1, without mappings.",
  "server",
  mutate(base.invocationAccepted, (m) => {
    m.mappings = [];
  }),
);
valid(
  "invocation-accepted-resumed",
  "A resumed acceptance: input high-water reported, terminal input included.",
  "server",
  mutate(base.invocationAccepted, (m) => {
    m.attemptId = RESUME_ATTEMPT;
    m.mappings = [
      { channel: 3, direction: "input", inputHighWater: { sequence: "42", terminal: true }, streamToken: STREAM_IN },
      inputMapping(1, STREAM_IN_2, "18446744073709551615"),
      outputMapping(2, STREAM_OUT),
    ];
  }),
);
valid("invocation-rejected", "The rejection of protocol section 6.2.", "server", base.invocationRejected);
valid(
  "invocation-rejected-without-attempt",
  "A rejection of a first message too broken to recover its attempt id.",
  "server",
  mutate(base.invocationRejected, (m) => {
    delete m.attemptId;
    m.code = "invalid-message";
    m.message = "the first message is not valid JSON";
  }),
);
valid(
  "invocation-rejected-retryable",
  "A retryable rejection after acceptance.",
  "server",
  mutate(base.invocationRejected, (m) => {
    m.code = "input-gap";
    m.message = "";
    m.retryable = true;
  }),
);
valid("invocation-result-value", "The value result of protocol section 6.3.", "server", base.invocationResult);
valid(
  "invocation-result-none",
  "A result of a method without a value.",
  "server",
  mutate(base.invocationResult, (m) => {
    m.result = { kind: "none" };
  }),
);
valid(
  "invocation-result-stream",
  "A result exposing an output stream, announced by its mapping.",
  "server",
  mutate(base.invocationResult, (m) => {
    m.mappings = [outputMapping(5, STREAM_OUT)];
    m.result = {
      graph: { root: { kind: "stream", value: { inner: { kind: "string", value: {} } } } },
      kind: "value",
      value: sv("stream", { streamToken: STREAM_OUT }),
    };
  }),
);
valid("output-stream-item", "The output item of protocol section 6.4.", "server", base.outputStreamItem);
valid(
  "output-stream-item-nested",
  "An output item exposing a nested output stream.",
  "server",
  mutate(base.outputStreamItem, (m) => {
    m.mappings = [outputMapping(9, token("nested"))];
    m.value = record(sv("string", "group-1"), sv("stream", { streamToken: token("nested") }));
  }),
);
valid("output-stream-end-ok", "The normal end of protocol section 6.5.", "server", base.outputStreamEnd);
valid(
  "output-stream-end-error",
  "The error end of protocol section 6.5.",
  "server",
  mutate(base.outputStreamEnd, (m) => {
    m.outcome = { code: "producer-error", kind: "error", message: "producer failed" };
  }),
);
valid(
  "output-stream-end-cancelled",
  "A cancelled end with a server reason.",
  "server",
  mutate(base.outputStreamEnd, (m) => {
    m.outcome = { kind: "cancelled", reason: "transport-detached" };
  }),
);
valid(
  "output-stream-end-no-cursor",
  "An end of a stream that produced no durable event: cursorToken omitted.",
  "server",
  mutate(base.outputStreamEnd, (m) => {
    delete m.cursorToken;
    m.sequence = "0";
  }),
);
valid("input-stream-ack", "The ACK of protocol section 6.6.", "server", base.inputStreamAck);
valid(
  "input-stream-ack-terminal-nested",
  "A terminal ACK announcing a nested input stream.",
  "server",
  mutate(base.inputStreamAck, (m) => {
    m.terminal = true;
    m.highestContiguousSequence = "8";
    m.mappings = [inputMapping(4, STREAM_IN_2, "0", { provisionalRef: PROVISIONAL_2 })];
  }),
);
for (const reason of [
  "cancelled",
  "consumer-drop",
  "transport-detached",
  "source-unavailable",
  "producer-deleted",
  "invocation-failed",
  "protocol-error",
]) {
  valid(
    `server-stream-cancel-${reason}`,
    `A server cancel with reason ${reason}.`,
    "server",
    mutate(base.serverStreamCancel, (m) => {
      m.reason = reason;
    }),
  );
}
valid("attachment-revoked", "The revocation of protocol section 6.8.", "server", base.attachmentRevoked);
valid("invocation-finished-success", "A successful finish.", "server", base.invocationFinished);
valid(
  "invocation-finished-failure",
  "A failed finish.",
  "server",
  mutate(base.invocationFinished, (m) => {
    m.outcome = { code: "invocation-failed", kind: "failure", message: "invocation failed" };
  }),
);
// Added after publication: a phantom ID is any lower-case UUID; only attempt IDs and provisional
// references must be UUIDv4 (protocol section 2). It replaces malformed "uuid-phantom-version-3",
// which wrongly refused it (docs/protocol/wire.md, "Vector changes").
valid(
  "invocation-start-phantom-id-version-7",
  "A start whose phantom id is a UUIDv7: the protocol requires version 4 only of attempt ids and provisional references.",
  "client",
  mutate(base.invocationStart, (m) => {
    m.selector.phantomId = "019ad4c2-7b3e-7c1a-9f2d-3e4b5c6d7e8f";
  }),
);

// ---- binary-messages.json ----

const binaryCases = [];
function binary(name, description, metadata, payload) {
  const metadataText = canon(metadata);
  const direction = metadata.kind.startsWith("input-") ? "client" : "server";
  binaryCases.push({
    name,
    description,
    direction,
    metadata,
    metadataText,
    payloadHex: hex(payload),
    envelopeHex: hex(envelope(metadataText, payload)),
  });
}
const meta = (kind, extra) => ({ channel: 1, kind, sequence: "0", version: 1, ...extra });

binary("input-u8", "The packed u8 batch of protocol section 7: three items.", meta("input-u8", { itemCount: "3" }), [0x00, 0x7f, 0xff]);
binary(
  "input-u8-last-items",
  "A batch ending exactly at 2^64 - 1 items: sequence 2^64 - 3 plus itemCount 2.",
  meta("input-u8", { channel: 4294967295, itemCount: "2", sequence: "18446744073709551613" }),
  [0x61, 0x62],
);
binary(
  "input-binary-empty",
  "One binary item with an empty payload (the envelope allows it; the schema decides).",
  meta("input-binary", { channel: 3, itemCount: "1", sequence: "12" }),
  [],
);
binary(
  "input-binary-mime",
  "One binary item with a MIME type.",
  meta("input-binary", { itemCount: "1", mimeType: "image/svg+xml" }),
  Array.from(utf8("<svg/>")),
);
binary(
  "output-u8",
  "A packed output batch with the cursor of its last byte.",
  meta("output-u8", { channel: 2, cursorToken: CURSOR, itemCount: "4", sequence: "100" }),
  [1, 2, 3, 4],
);
binary(
  "output-binary",
  "One output binary item with cursor and MIME type.",
  meta("output-binary", { channel: 2, cursorToken: CURSOR, itemCount: "1", mimeType: "application/octet-stream", sequence: "5" }),
  [0xde, 0xad, 0xbe, 0xef],
);
binary(
  "output-binary-no-mime",
  "One output binary item without MIME type.",
  meta("output-binary", { channel: 7, cursorToken: CURSOR_2, itemCount: "1" }),
  [0],
);

// ---- malformed.json ----

const malformedCases = [];
const names = new Set();
function add(entry) {
  if (names.has(entry.name)) throw new Error(`duplicate case ${entry.name}`);
  names.add(entry.name);
  malformedCases.push(entry);
}
/** A text-frame case; `message` is a raw string or an object written canonically. */
function bad(name, description, direction, message, expectedCode = "invalid-message") {
  add({ name, description, direction, binary: false, text: typeof message === "string" ? message : canon(message), expectedCode });
}
function badBytes(name, description, direction, bytes, expectedCode = "invalid-message") {
  add({ name, description, direction, binary: false, textHex: hex(bytes), expectedCode });
}
function badEnvelope(name, description, direction, bytes, expectedCode = "invalid-message") {
  add({ name, description, direction, binary: true, envelopeHex: hex(bytes), expectedCode });
}
function generated(name, description, direction, binaryFrame, parts, expectedCode) {
  add({ name, description, direction, binary: binaryFrame, generate: { kind: "concat", parts }, expectedCode });
}

// Strict JSON (section 2).
const itemText = canon(base.inputStreamItem);
badBytes(
  "invalid-utf8",
  "A text message with an invalid UTF-8 byte inside a string.",
  "client",
  Buffer.concat([utf8('{"channel":1,"reason":"cancelled'), Buffer.from([0xff]), utf8('","type":"streamCancel","version":1}')]),
);
badBytes(
  "overlong-utf8",
  "A text message with an overlong UTF-8 encoding of '/'.",
  "client",
  Buffer.concat([utf8('{"channel":1,"reason":"cancelled'), Buffer.from([0xc0, 0xaf]), utf8('","type":"streamCancel","version":1}')]),
);
badBytes(
  "encoded-surrogate-utf8",
  "A text message with a UTF-8-encoded surrogate (ED A0 80).",
  "client",
  Buffer.concat([utf8('{"channel":1,"reason":"cancelled'), Buffer.from([0xed, 0xa0, 0x80]), utf8('","type":"streamCancel","version":1}')]),
);
badBytes(
  "truncated-utf8",
  "A text message ending in the middle of a UTF-8 sequence.",
  "client",
  Buffer.concat([utf8(itemText.slice(0, -1)), Buffer.from([0xe2, 0x82])]),
);
badBytes(
  "utf8-bom",
  "A text message starting with a UTF-8 byte-order mark.",
  "client",
  Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8(itemText)]),
);
bad(
  "lone-high-surrogate-escape",
  "A string value ending in an escaped high surrogate with no low surrogate.",
  "client",
  '{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"string","value":"a\\ud800"},"version":1}',
);
bad(
  "lone-low-surrogate-escape",
  "A string value with an escaped low surrogate alone.",
  "client",
  '{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"string","value":"\\udc00b"},"version":1}',
);
bad(
  "reversed-surrogate-escapes",
  "Escaped surrogates in the wrong order.",
  "server",
  '{"code":"internal-error","message":"\\udc00\\ud800","retryable":true,"type":"invocationRejected","version":1}',
);
bad(
  "lone-surrogate-in-member-name",
  "A member name that is an escaped lone surrogate, inside a config value.",
  "client",
  canon(base.invocationStart).replace('"config":[]', '"config":[{"path":["a"],"value":{"\\ud83d":1}}]'),
);
bad("trailing-comma", "An object with a trailing comma.", "client", '{"channel":1,"sequence":"1","type":"inputStreamEnd","version":1,}');
bad("single-quotes", "Single-quoted strings are not JSON.", "client", "{'channel':1,'sequence':'1','type':'inputStreamEnd','version':1}");
bad(
  "unterminated-object",
  "A message cut off before its closing brace.",
  "client",
  '{"channel":1,"sequence":"1","type":"inputStreamEnd","version":1',
);
bad("two-documents", "Two JSON objects in one message.", "client", `${canon(base.inputStreamEnd)}${canon(base.inputStreamEnd)}`);
bad("comment", "A JavaScript comment is not JSON.", "client", '{"channel":1,/* one */"sequence":"1","type":"inputStreamEnd","version":1}');
bad("nan-literal", "NaN is not a JSON value.", "client", '{"channel":NaN,"sequence":"1","type":"inputStreamEnd","version":1}');
bad(
  "leading-zero-number",
  "A JSON number with a leading zero.",
  "client",
  '{"channel":01,"sequence":"1","type":"inputStreamEnd","version":1}',
);
bad(
  "number-overflow",
  "A number beyond the range of a double inside a value.",
  "client",
  '{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"f64","value":1e999},"version":1}',
);
bad(
  "raw-control-character",
  "An unescaped control character inside a string.",
  "client",
  '{"channel":1,"reason":"cancelled\u0001","type":"streamCancel","version":1}',
);
bad("empty-message", "An empty text message.", "client", "");
bad("whitespace-only", "A text message of only whitespace.", "server", " \n\t ");
bad("top-level-array", "A top-level array instead of an object.", "client", `[${canon(base.inputStreamEnd)}]`);
bad("top-level-string", "A top-level string.", "server", '"invocationFinished"');
bad("top-level-number", "A top-level number.", "client", "1");
bad("top-level-null", "A top-level null.", "server", "null");
bad(
  "duplicate-top-level-member",
  "The member channel appears twice.",
  "client",
  '{"channel":1,"channel":1,"sequence":"1","type":"inputStreamEnd","version":1}',
);
bad(
  "duplicate-member-escaped",
  "A duplicate member spelled once with an escape (t\\u0079pe).",
  "client",
  '{"channel":1,"sequence":"1","type":"inputStreamEnd","t\\u0079pe":"inputStreamEnd","version":1}',
);
bad(
  "duplicate-member-in-value",
  "A duplicate member deep inside a SchemaValue.",
  "client",
  '{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"record","value":{"fields":[{"kind":"string","kind":"string","value":"x"}]}},"version":1}',
);
bad(
  "duplicate-member-in-config",
  "A duplicate member inside a config value.",
  "client",
  canon(base.invocationStart).replace('"config":[]', '"config":[{"path":["a"],"value":{"x":1,"x":2}}]'),
);
bad(
  "duplicate-member-in-graph",
  "A duplicate member inside a result graph.",
  "server",
  '{"mappings":[],"result":{"graph":{"root":{"kind":"bool","value":{}},"root":{"kind":"bool","value":{}}},"kind":"value","value":{"kind":"bool","value":true}},"type":"invocationResult","version":1}',
);
bad(
  "too-deep",
  "Containers nested 129 deep (127 arrays inside a SchemaValue): deeper than the JSON depth limit of 128.",
  "client",
  `{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"list","value":${"[".repeat(127)}${"]".repeat(127)}},"version":1}`,
  "limit-exceeded",
);
{
  const head = '{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"string","value":"';
  const tail = '"},"version":1}';
  generated(
    "text-too-large",
    "A valid-looking text message of 8 MiB + 1 bytes: over the text message limit (checked before parsing).",
    "client",
    false,
    [{ text: head }, { repeat: "a", count: 8 * 1024 * 1024 + 1 - head.length - tail.length }, { text: tail }],
    "limit-exceeded",
  );
}

// version and type.
bad(
  "version-missing",
  "version is required.",
  "client",
  mutate(base.inputStreamEnd, (m) => delete m.version),
);
bad(
  "version-string",
  "version must be the JSON number 1, not the string.",
  "client",
  mutate(base.inputStreamEnd, (m) => (m.version = "1")),
);
bad(
  "version-two",
  "version 2 is not protocol v1.",
  "server",
  mutate(base.attachmentRevoked, (m) => (m.version = 2)),
);
bad(
  "version-zero",
  "version 0 is not protocol v1.",
  "client",
  mutate(base.inputStreamEnd, (m) => (m.version = 0)),
);
bad(
  "version-true",
  "version true is not the number 1.",
  "client",
  mutate(base.inputStreamEnd, (m) => (m.version = true)),
);
bad(
  "version-null",
  "version null is not the number 1.",
  "server",
  mutate(base.invocationFinished, (m) => (m.version = null)),
);
bad(
  "type-missing",
  "type is required.",
  "client",
  mutate(base.inputStreamEnd, (m) => delete m.type),
);
bad(
  "type-unknown",
  "An unknown variant name.",
  "client",
  mutate(base.inputStreamEnd, (m) => (m.type = "inputStreamStop")),
);
bad(
  "type-case",
  "Variant names are case-sensitive.",
  "server",
  mutate(base.invocationFinished, (m) => (m.type = "InvocationFinished")),
);
bad(
  "type-number",
  "type must be a string.",
  "client",
  mutate(base.inputStreamEnd, (m) => (m.type = 3)),
);
bad(
  "wrong-direction-accepted-from-client",
  "invocationAccepted is a server-to-client message; a server must not accept it from a client.",
  "client",
  base.invocationAccepted,
);
bad(
  "wrong-direction-start-from-server",
  "invocationStart is a client-to-server message; a client must not accept it from a server.",
  "server",
  base.invocationStart,
);
bad("wrong-direction-ack-from-client", "inputStreamAck sent by a client.", "client", base.inputStreamAck);
bad("wrong-direction-item-from-server", "inputStreamItem sent by a server.", "server", base.inputStreamItem);
bad("binary-kind-as-text", "Binary metadata sent as a text frame has no type.", "client", {
  channel: 1,
  itemCount: "1",
  kind: "input-u8",
  sequence: "0",
  version: 1,
});

// Unknown, missing, illegal and null members.
bad(
  "unknown-top-level-member",
  "A member no variant defines.",
  "client",
  mutate(base.inputStreamEnd, (m) => (m.extra = true)),
);
bad(
  "illegal-member-for-variant",
  "cursorToken belongs to output items, not input items.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.cursorToken = CURSOR)),
);
bad(
  "illegal-mappings-on-end",
  "mappings is not a member of outputStreamEnd.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.mappings = [])),
);
bad(
  "proto-top-level-member",
  "A top-level __proto__ member is an unknown member like any other.",
  "client",
  '{"__proto__":{},"channel":1,"sequence":"1","type":"inputStreamEnd","version":1}',
);
bad(
  "attempt-id-on-item",
  "attemptId is not a member of inputStreamItem.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.attemptId = ATTEMPT)),
);
for (const [variant, direction, member] of [
  ["invocationStart", "client", "attemptId"],
  ["invocationStart", "client", "config"],
  ["invocationStart", "client", "idempotencyKey"],
  ["invocationStart", "client", "methodParameters"],
  ["invocationStart", "client", "selector"],
  ["resumeAttach", "client", "operation"],
  ["resumeAttach", "client", "outputCursors"],
  ["resumeAttach", "client", "sessionToken"],
  ["inputStreamItem", "client", "channel"],
  ["inputStreamItem", "client", "sequence"],
  ["inputStreamItem", "client", "value"],
  ["inputStreamEnd", "client", "sequence"],
  ["clientStreamCancel", "client", "reason"],
  ["invocationAccepted", "server", "attemptId"],
  ["invocationAccepted", "server", "idempotencyKey"],
  ["invocationAccepted", "server", "mappings"],
  ["invocationAccepted", "server", "sessionToken"],
  ["invocationRejected", "server", "code"],
  ["invocationRejected", "server", "message"],
  ["invocationRejected", "server", "retryable"],
  ["invocationResult", "server", "mappings"],
  ["invocationResult", "server", "result"],
  ["outputStreamItem", "server", "cursorToken"],
  ["outputStreamItem", "server", "mappings"],
  ["outputStreamItem", "server", "value"],
  ["outputStreamEnd", "server", "outcome"],
  ["outputStreamEnd", "server", "sequence"],
  ["inputStreamAck", "server", "highestContiguousSequence"],
  ["inputStreamAck", "server", "terminal"],
  ["serverStreamCancel", "server", "channel"],
  ["attachmentRevoked", "server", "reason"],
  ["invocationFinished", "server", "outcome"],
]) {
  const kebab = (name) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  bad(
    `missing-${kebab(variant)}-${kebab(member)}`,
    `${member} is required in ${base[variant].type}.`,
    direction,
    mutate(base[variant], (m) => delete m[member]),
  );
}
bad(
  "null-phantom-id",
  "An optional member (phantomId) must be omitted, not null.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.phantomId = null)),
);
bad(
  "null-cursor-token-on-end",
  "outputStreamEnd.cursorToken must be omitted, not null.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.cursorToken = null)),
);
bad(
  "null-attempt-id-on-rejection",
  "invocationRejected.attemptId must be omitted, not null.",
  "server",
  mutate(base.invocationRejected, (m) => (m.attemptId = null)),
);
bad(
  "null-provisional-ref",
  "A mapping's provisionalRef must be omitted, not null.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].provisionalRef = null)),
);
bad(
  "null-required-member",
  "A required member (sessionToken) given as null.",
  "client",
  mutate(base.resumeAttach, (m) => (m.sessionToken = null)),
);

// Canonical decimal strings.
for (const [name, value, description] of [
  ["number", 0, "a JSON number where a canonical decimal string is required"],
  ["leading-zero", "01", "a leading zero"],
  ["plus-sign", "+1", "a leading plus sign"],
  ["negative", "-1", "a negative value"],
  ["negative-zero", "-0", "-0"],
  ["empty", "", "an empty string"],
  ["fraction", "1.0", "a fraction"],
  ["exponent", "1e3", "an exponent"],
  ["space", " 1", "a leading space"],
  ["hex", "0x10", "hexadecimal"],
  ["fullwidth-digit", "\uFF11", "a non-ASCII digit"],
  ["two-to-the-64", "18446744073709551616", "2^64, one more than the largest u64"],
  ["twenty-one-digits", "100000000000000000000", "21 digits"],
]) {
  bad(
    `decimal-${name}`,
    `inputStreamEnd.sequence with ${description}.`,
    "client",
    mutate(base.inputStreamEnd, (m) => (m.sequence = value)),
  );
}
bad(
  "decimal-number-in-ack",
  "highestContiguousSequence as a JSON number.",
  "server",
  mutate(base.inputStreamAck, (m) => (m.highestContiguousSequence = 1)),
);
bad(
  "decimal-high-water-non-canonical",
  "inputHighWater.sequence with a leading zero.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[0].inputHighWater.sequence = "00")),
);
bad(
  "decimal-output-item-sequence-overflow",
  "outputStreamItem.sequence of 2^64.",
  "server",
  mutate(base.outputStreamItem, (m) => (m.sequence = "18446744073709551616")),
);
bad(
  "item-sequence-no-room",
  "An input item at sequence 2^64 - 1 would make the item count overflow a u64.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.sequence = U64_MAX)),
);
bad(
  "output-item-sequence-no-room",
  "An output item at sequence 2^64 - 1 would make the item count overflow a u64.",
  "server",
  mutate(base.outputStreamItem, (m) => (m.sequence = U64_MAX)),
);

// UUIDs.
for (const [name, value, description] of [
  ["upper-case", ATTEMPT.toUpperCase(), "upper-case hex digits"],
  ["version-1", "ca7e5a82-2064-1c18-8359-806145c1562f", "version nibble 1"],
  ["variant", "ca7e5a82-2064-4c18-c359-806145c1562f", "a non-RFC-4122 variant nibble (c)"],
  ["no-hyphens", ATTEMPT.replaceAll("-", ""), "no hyphens"],
  ["braces", `{${ATTEMPT}}`, "braces"],
  ["short", ATTEMPT.slice(0, 35), "35 characters"],
  ["nil", "00000000-0000-0000-0000-000000000000", "the nil UUID"],
]) {
  bad(
    `uuid-attempt-${name}`,
    `invocationStart.attemptId with ${description}.`,
    "client",
    mutate(base.invocationStart, (m) => (m.attemptId = value)),
  );
}
bad(
  "uuid-resume-attempt-number",
  "resumeAttach.attemptId as a number.",
  "client",
  mutate(base.resumeAttach, (m) => (m.attemptId = 1)),
);
bad(
  "uuid-phantom-upper-case",
  "selector.phantomId in upper case (any version is allowed, upper case is not).",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.phantomId = PHANTOM.toUpperCase())),
);
bad(
  "uuid-phantom-no-hyphens",
  "selector.phantomId without hyphens.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.phantomId = PHANTOM.replaceAll("-", ""))),
);
bad(
  "uuid-provisional-ref-upper",
  "A mapping's provisionalRef in upper case.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[0].provisionalRef = PROVISIONAL.toUpperCase())),
);
bad(
  "uuid-accepted-attempt",
  "invocationAccepted.attemptId that is not a UUID.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.attemptId = "attempt-1")),
);
bad(
  "uuid-rejected-attempt",
  "invocationRejected.attemptId with a version-5 UUID.",
  "server",
  mutate(base.invocationRejected, (m) => (m.attemptId = "ca7e5a82-2064-5c18-8359-806145c1562f")),
);

// Channels.
for (const [name, value, description] of [
  ["zero", 0, "0 (reserved)"],
  ["too-large", 4294967296, "2^32"],
  ["negative", -1, "-1"],
  ["fraction", 1.5, "1.5"],
  ["string", "1", "a string"],
  ["null", null, "null"],
]) {
  bad(
    `channel-${name}`,
    `channel ${description}.`,
    "client",
    mutate(base.clientStreamCancel, (m) => (m.channel = value)),
  );
}
bad(
  "channel-zero-in-mapping",
  "A mapping on channel 0.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].channel = 0)),
);
bad(
  "channel-too-large-on-ack",
  "inputStreamAck on channel 2^32.",
  "server",
  mutate(base.inputStreamAck, (m) => (m.channel = 4294967296)),
);

// Mappings.
bad(
  "mappings-duplicate-channel",
  "Two mappings of one message on the same channel.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].channel = 1)),
);
bad(
  "mappings-duplicate-token",
  "Two mappings of one message with the same stream token.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1] = inputMapping(2, STREAM_IN))),
);
bad(
  "mappings-duplicate-provisional-ref",
  "Two mappings of one message resolving the same provisional reference.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1] = inputMapping(2, STREAM_IN_2, "0", { provisionalRef: PROVISIONAL }))),
);
bad(
  "mappings-input-without-high-water",
  "An input mapping without inputHighWater.",
  "server",
  mutate(base.invocationAccepted, (m) => delete m.mappings[0].inputHighWater),
);
bad(
  "mappings-output-with-high-water",
  "An output mapping with inputHighWater.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].inputHighWater = { sequence: "0", terminal: false })),
);
bad(
  "mappings-output-with-provisional-ref",
  "Provisional references name client inputs; an output mapping cannot carry one.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].provisionalRef = PROVISIONAL_2)),
);
bad(
  "mappings-direction-unknown",
  "A mapping direction other than input or output.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].direction = "both")),
);
bad(
  "mappings-not-array",
  "mappings must be an array.",
  "server",
  mutate(base.invocationResult, (m) => (m.mappings = {})),
);
bad(
  "mappings-element-not-object",
  "A mapping must be an object.",
  "server",
  mutate(base.invocationResult, (m) => (m.mappings = [1])),
);
bad(
  "mappings-unknown-member",
  "A mapping with an unknown member.",
  "server",
  mutate(base.outputStreamItem, (m) => (m.mappings = [{ ...outputMapping(3, STREAM_OUT), epoch: 1 }])),
);
bad(
  "mappings-missing-token",
  "A mapping without streamToken.",
  "server",
  mutate(base.inputStreamAck, (m) => (m.mappings = [{ channel: 3, direction: "output" }])),
);
bad(
  "high-water-terminal-missing",
  "inputHighWater without terminal.",
  "server",
  mutate(base.invocationAccepted, (m) => delete m.mappings[0].inputHighWater.terminal),
);
bad(
  "high-water-extra-member",
  "inputHighWater with an unknown member.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[0].inputHighWater.offset = "0")),
);
bad(
  "high-water-terminal-string",
  "inputHighWater.terminal as a string.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[0].inputHighWater.terminal = "false")),
);
generated(
  "mappings-too-many",
  "4097 distinct mappings in one message: more than a session's 4096 streams.",
  "server",
  false,
  [
    { text: '{"mappings":[' },
    { numbered: '{"channel":{n},"direction":"output","streamToken":"gai1_t{n}"}', count: 4097, start: 1, separator: "," },
    { text: '],"result":{"kind":"none"},"type":"invocationResult","version":1}' },
  ],
  "limit-exceeded",
);

// Cancel reasons, outcomes and codes.
for (const reason of ["transport-detached", "producer-deleted", "invocation-failed", "protocol-error"]) {
  bad(
    `client-cancel-server-reason-${reason}`,
    `${reason} is a server cancel reason; a client cannot send it.`,
    "client",
    mutate(base.clientStreamCancel, (m) => (m.reason = reason)),
  );
}
bad(
  "client-cancel-unknown-reason",
  "An unknown cancel reason from a client.",
  "client",
  mutate(base.clientStreamCancel, (m) => (m.reason = "timeout")),
);
bad(
  "server-cancel-unknown-reason",
  "An unknown cancel reason from a server.",
  "server",
  mutate(base.serverStreamCancel, (m) => (m.reason = "replaced")),
);
bad(
  "outcome-invocation-kind-on-stream",
  "success is an invocation outcome, not a stream outcome.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = { kind: "success" })),
);
bad(
  "outcome-error-without-message",
  "An error outcome needs a message.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = { code: "producer-error", kind: "error" })),
);
bad(
  "outcome-error-unknown-code",
  "An error outcome with a code outside the v1 set.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = { code: "producer_error", kind: "error", message: "x" })),
);
bad(
  "outcome-ok-extra-member",
  "An ok outcome has no other member.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = { kind: "ok", message: "done" })),
);
bad(
  "outcome-cancelled-without-reason",
  "A cancelled outcome needs a reason.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = { kind: "cancelled" })),
);
bad(
  "outcome-cancelled-unknown-reason",
  "A cancelled outcome with a reason outside the server set.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = { kind: "cancelled", reason: "replaced" })),
);
bad(
  "outcome-not-object",
  "outcome must be an object.",
  "server",
  mutate(base.outputStreamEnd, (m) => (m.outcome = "ok")),
);
bad(
  "outcome-stream-kind-on-invocation",
  "ok is a stream outcome, not an invocation outcome.",
  "server",
  mutate(base.invocationFinished, (m) => (m.outcome = { kind: "ok" })),
);
bad(
  "outcome-failure-without-code",
  "A failure outcome needs a code.",
  "server",
  mutate(base.invocationFinished, (m) => (m.outcome = { kind: "failure", message: "x" })),
);
bad(
  "outcome-failure-unknown-code",
  "A failure outcome with a code outside the v1 set.",
  "server",
  mutate(base.invocationFinished, (m) => (m.outcome = { code: "crashed", kind: "failure", message: "x" })),
);
bad(
  "outcome-success-extra-member",
  "A success outcome has no other member.",
  "server",
  mutate(base.invocationFinished, (m) => (m.outcome = { kind: "success", code: "invocation-failed" })),
);
bad(
  "rejection-unknown-code",
  "A rejection code outside the v1 set.",
  "server",
  mutate(base.invocationRejected, (m) => (m.code = "validation_error")),
);
bad(
  "rejection-retryable-string",
  "retryable must be a boolean.",
  "server",
  mutate(base.invocationRejected, (m) => (m.retryable = "false")),
);
bad(
  "rejection-message-not-string",
  "message must be a string.",
  "server",
  mutate(base.invocationRejected, (m) => (m.message = ["x"])),
);
bad(
  "revoked-unknown-reason",
  "replaced is the sole v1 revocation reason.",
  "server",
  mutate(base.attachmentRevoked, (m) => (m.reason = "expired")),
);
bad(
  "operation-unknown",
  "operation is resume or takeover.",
  "client",
  mutate(base.resumeAttach, (m) => (m.operation = "restart")),
);
bad(
  "ack-terminal-not-boolean",
  "inputStreamAck.terminal must be a boolean.",
  "server",
  mutate(base.inputStreamAck, (m) => (m.terminal = 0)),
);

// Results.
bad(
  "result-value-without-graph",
  "A value result needs its graph.",
  "server",
  mutate(base.invocationResult, (m) => delete m.result.graph),
);
bad(
  "result-graph-not-object",
  "A result graph must be an object.",
  "server",
  mutate(base.invocationResult, (m) => (m.result.graph = [])),
);
bad(
  "result-none-with-value",
  "A none result has no value.",
  "server",
  mutate(base.invocationResult, (m) => (m.result = { kind: "none", value: sv("bool", true) })),
);
bad(
  "result-unknown-kind",
  "A result kind other than none or value.",
  "server",
  mutate(base.invocationResult, (m) => (m.result = { kind: "unit" })),
);

// SchemaValue shape.
bad(
  "value-not-object",
  "A SchemaValue must be an object.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.value = "ready")),
);
bad(
  "value-null",
  "A SchemaValue cannot be null.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.value = null)),
);
bad(
  "value-missing-kind",
  "A SchemaValue without kind.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.value = { value: "ready" })),
);
bad(
  "value-missing-value",
  "A SchemaValue without value.",
  "server",
  mutate(base.outputStreamItem, (m) => (m.value = { kind: "string" })),
);
bad(
  "value-extra-member",
  "A SchemaValue with a third member.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.value = { kind: "string", type: "string", value: "x" })),
);
bad(
  "value-kind-not-string",
  "A SchemaValue kind must be a string.",
  "client",
  mutate(base.inputStreamItem, (m) => (m.value = { kind: 1, value: "x" })),
);
bad(
  "method-parameters-array",
  "methodParameters must be a SchemaValue object.",
  "client",
  mutate(base.invocationStart, (m) => (m.methodParameters = [])),
);
bad(
  "result-value-bad-shape",
  "A result value must be a SchemaValue.",
  "server",
  mutate(base.invocationResult, (m) => (m.result.value = true)),
);

// Selector.
bad(
  "selector-missing-method",
  "selector.method is required.",
  "client",
  mutate(base.invocationStart, (m) => delete m.selector.method),
);
bad(
  "selector-unknown-member",
  "selector with an unknown member.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.component = "x")),
);
bad(
  "selector-empty-application",
  "selector.application must not be empty.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.application = "")),
);
bad(
  "selector-agent-type-number",
  "selector.agentType must be a string.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.agentType = 7)),
);
bad(
  "selector-constructor-bad-shape",
  "constructorParameters must be a SchemaValue.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector.constructorParameters = { kind: "record" })),
);
bad(
  "selector-not-object",
  "selector must be an object.",
  "client",
  mutate(base.invocationStart, (m) => (m.selector = "demo/default/media")),
);

// Idempotency key.
bad(
  "idempotency-key-empty",
  "An empty idempotency key.",
  "client",
  mutate(base.invocationStart, (m) => (m.idempotencyKey = "")),
);
bad(
  "idempotency-key-1025-bytes",
  "An idempotency key of 1025 ASCII bytes.",
  "client",
  mutate(base.invocationStart, (m) => (m.idempotencyKey = "k".repeat(1025))),
  "limit-exceeded",
);
bad(
  "idempotency-key-utf8-bytes",
  "342 three-byte characters: 342 UTF-16 units but 1026 UTF-8 bytes, over 1 KiB.",
  "client",
  mutate(base.invocationStart, (m) => (m.idempotencyKey = "€".repeat(342))),
  "limit-exceeded",
);
bad(
  "idempotency-key-number",
  "An idempotency key must be a string.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.idempotencyKey = 42)),
);

// Configuration.
bad(
  "config-not-array",
  "config must be an array.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = {})),
);
bad(
  "config-entry-missing-value",
  "A config entry without value.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["a"] }])),
);
bad(
  "config-entry-extra-member",
  "A config entry with an unknown member.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["a"], secret: true, value: 1 }])),
);
bad(
  "config-path-empty",
  "A config path must have at least one segment.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: [], value: 1 }])),
);
bad(
  "config-path-empty-segment",
  "A config path segment must not be empty.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["provider", ""], value: 1 }])),
);
bad(
  "config-path-segment-number",
  "A config path segment must be a string.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["provider", 0], value: 1 }])),
);
bad(
  "config-path-not-array",
  "A config path must be an array.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: "provider.model", value: 1 }])),
);
bad(
  "config-path-33-segments",
  "A config path of 33 segments: over the limit of 32.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: Array.from({ length: 33 }, (_, i) => `s${i}`), value: 1 }])),
  "limit-exceeded",
);
bad(
  "config-duplicate-path",
  "Two config entries with the same path.",
  "client",
  mutate(
    base.invocationStart,
    (m) =>
      (m.config = [
        { path: ["a", "b"], value: 1 },
        { path: ["a", "b"], value: 2 },
      ]),
  ),
);
bad(
  "config-stream-token",
  "A config value that is a stream reference (stable token form).",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["a"], value: sv("stream", { streamToken: STREAM_IN }) }])),
);
bad(
  "config-provisional-ref",
  "A config value that is a stream reference (provisional form).",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["a"], value: provisional(PROVISIONAL) }])),
);
bad(
  "config-nested-stream",
  "A stream reference nested deep inside a config value.",
  "client",
  mutate(base.invocationStart, (m) => (m.config = [{ path: ["a"], value: { list: [1, { inner: sv("stream", {}) }] } }])),
);
generated(
  "config-too-many-entries",
  "257 config entries with distinct paths: over the limit of 256.",
  "client",
  false,
  [
    { text: canon(base.invocationStart).split('"config":[]')[0] + '"config":[' },
    { numbered: '{"path":["k{n}"],"value":{n}}', count: 257, start: 0, separator: "," },
    { text: "]," + canon(base.invocationStart).split('"config":[],')[1] },
  ],
  "limit-exceeded",
);

// Tokens.
bad(
  "session-token-empty",
  "An empty session token.",
  "client",
  mutate(base.resumeAttach, (m) => (m.sessionToken = "")),
);
bad(
  "session-token-space",
  "A token containing a space.",
  "client",
  mutate(base.resumeAttach, (m) => (m.sessionToken = "gai1_abc def")),
);
bad(
  "session-token-non-ascii",
  "A token containing a non-ASCII character.",
  "client",
  mutate(base.resumeAttach, (m) => (m.sessionToken = "gai1_é")),
);
bad(
  "session-token-control",
  "A token containing a control character.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.sessionToken = "gai1_\n")),
);
bad(
  "session-token-number",
  "A token must be a string.",
  "client",
  mutate(base.resumeAttach, (m) => (m.sessionToken = 5)),
);
bad(
  "session-token-8193",
  "A token of 8193 bytes: over the 8192-byte token limit.",
  "client",
  mutate(base.resumeAttach, (m) => (m.sessionToken = `gai1_${"A".repeat(8188)}`)),
  "limit-exceeded",
);
bad(
  "stream-token-empty",
  "A mapping with an empty stream token.",
  "server",
  mutate(base.invocationAccepted, (m) => (m.mappings[1].streamToken = "")),
);
bad(
  "cursor-token-empty-on-item",
  "An output item with an empty cursor token.",
  "server",
  mutate(base.outputStreamItem, (m) => (m.cursorToken = "")),
);
bad(
  "output-cursors-duplicate",
  "The same output cursor twice.",
  "client",
  mutate(base.resumeAttach, (m) => (m.outputCursors = [CURSOR, CURSOR])),
);
bad(
  "output-cursors-not-array",
  "outputCursors must be an array.",
  "client",
  mutate(base.resumeAttach, (m) => (m.outputCursors = CURSOR)),
);
bad(
  "output-cursors-empty-token",
  "An empty output cursor.",
  "client",
  mutate(base.resumeAttach, (m) => (m.outputCursors = [""])),
);
bad(
  "output-cursors-null-element",
  "A null output cursor.",
  "client",
  mutate(base.resumeAttach, (m) => (m.outputCursors = [null])),
);
generated(
  "output-cursors-too-many",
  "4097 distinct output cursors: more than a session's 4096 streams.",
  "client",
  false,
  [
    { text: `{"attemptId":"${RESUME_ATTEMPT}","operation":"resume","outputCursors":[` },
    { numbered: '"gai1_c{n}"', count: 4097, start: 0, separator: "," },
    { text: `],"sessionToken":"${SESSION}","type":"resumeAttach","version":1}` },
  ],
  "limit-exceeded",
);

// Binary envelopes (section 7, decisions section 3).
const okMeta = meta("input-u8", { itemCount: "3" });
const env = (metadata, payload = [1, 2, 3]) => envelope(typeof metadata === "string" ? metadata : canon(metadata), payload);
badEnvelope("envelope-empty", "An empty binary message.", "client", []);
badEnvelope("envelope-short-prefix", "A binary message shorter than its 4-byte length prefix.", "client", [0, 0, 0]);
badEnvelope(
  "envelope-metadata-length-over-limit",
  "A metadata length of 65537: over 64 KiB, rejected before reading metadata.",
  "client",
  [0x00, 0x01, 0x00, 0x01, 0x7b, 0x7d],
  "limit-exceeded",
);
badEnvelope("envelope-metadata-length-huge", "A metadata length of 2^32 - 1.", "server", [0xff, 0xff, 0xff, 0xff], "limit-exceeded");
badEnvelope(
  "envelope-metadata-truncated",
  "A metadata length longer than the message.",
  "client",
  Buffer.concat([Buffer.from([0, 0, 0, 200]), utf8(canon(okMeta))]),
);
badEnvelope("envelope-metadata-empty", "A zero metadata length: empty metadata is not JSON.", "client", [0, 0, 0, 0, 1, 2, 3]);
badEnvelope("envelope-metadata-not-json", "Metadata that is not JSON.", "client", env("kind=input-u8"));
badEnvelope(
  "envelope-metadata-invalid-utf8",
  "Metadata with an invalid UTF-8 byte (FE) inside a string.",
  "client",
  envelope(
    Buffer.concat([
      utf8('{"channel":1,"itemCount":"3","kind":"input-u8","sequence":"0","version":1,"x":"'),
      Buffer.from([0xfe]),
      utf8('"}'),
    ]),
    [1, 2, 3],
  ),
);
badEnvelope("envelope-metadata-array", "Metadata that is a JSON array.", "client", env("[1]"));
badEnvelope(
  "envelope-metadata-duplicate",
  "Metadata with a duplicate member.",
  "client",
  env('{"channel":1,"channel":1,"itemCount":"3","kind":"input-u8","sequence":"0","version":1}'),
);
badEnvelope(
  "envelope-metadata-too-deep",
  "Metadata whose containers nest 129 deep.",
  "client",
  env(`{"x":${"[".repeat(128)}${"]".repeat(128)}}`),
  "limit-exceeded",
);
badEnvelope("envelope-version-missing", "Metadata without version.", "client", env(mutate(okMeta, (m) => delete m.version)));
badEnvelope("envelope-version-two", "Metadata with version 2.", "client", env(mutate(okMeta, (m) => (m.version = 2))));
badEnvelope("envelope-version-string", 'Metadata with version "1".', "client", env(mutate(okMeta, (m) => (m.version = "1"))));
badEnvelope("envelope-kind-missing", "Metadata without kind.", "client", env(mutate(okMeta, (m) => delete m.kind)));
badEnvelope("envelope-kind-unknown", "An unknown metadata kind.", "client", env(mutate(okMeta, (m) => (m.kind = "input-u16"))));
badEnvelope("envelope-text-variant", "A text variant sent in a binary frame.", "client", env(base.inputStreamItem, []));
badEnvelope(
  "envelope-output-kind-from-client",
  "output-u8 sent by a client.",
  "client",
  env(meta("output-u8", { cursorToken: CURSOR, itemCount: "3" })),
);
badEnvelope("envelope-input-kind-from-server", "input-binary sent by a server.", "server", env(meta("input-binary", { itemCount: "1" })));
badEnvelope("envelope-unknown-member", "Metadata with an unknown member.", "client", env(mutate(okMeta, (m) => (m.offset = "0"))));
badEnvelope("envelope-channel-zero", "Metadata on channel 0.", "client", env(mutate(okMeta, (m) => (m.channel = 0))));
badEnvelope(
  "envelope-channel-string",
  "Metadata channel as a string.",
  "server",
  env(meta("output-u8", { channel: "1", cursorToken: CURSOR, itemCount: "3" })),
);
badEnvelope("envelope-sequence-number", "Metadata sequence as a JSON number.", "client", env(mutate(okMeta, (m) => (m.sequence = 0))));
badEnvelope(
  "envelope-sequence-non-canonical",
  "Metadata sequence with a leading zero.",
  "client",
  env(mutate(okMeta, (m) => (m.sequence = "00"))),
);
badEnvelope("envelope-item-count-missing", "Metadata without itemCount.", "client", env(mutate(okMeta, (m) => delete m.itemCount)));
badEnvelope("envelope-item-count-number", "itemCount as a JSON number.", "client", env(mutate(okMeta, (m) => (m.itemCount = 3))));
badEnvelope(
  "envelope-item-count-non-canonical",
  "itemCount with a leading zero.",
  "client",
  env(mutate(okMeta, (m) => (m.itemCount = "03"))),
);
badEnvelope(
  "envelope-u8-item-count-mismatch",
  "A packed u8 itemCount that differs from the payload length.",
  "client",
  env(mutate(okMeta, (m) => (m.itemCount = "2"))),
);
badEnvelope(
  "envelope-binary-item-count-two",
  "A binary item's itemCount must be 1.",
  "client",
  env(meta("input-binary", { itemCount: "2" })),
);
badEnvelope(
  "envelope-binary-item-count-zero",
  "A binary item's itemCount must be 1, even with an empty payload.",
  "server",
  env(meta("output-binary", { cursorToken: CURSOR, itemCount: "0" }), []),
);
badEnvelope(
  "envelope-u8-empty-payload",
  "A packed u8 batch with no bytes.",
  "client",
  env(
    mutate(okMeta, (m) => (m.itemCount = "0")),
    [],
  ),
);
badEnvelope(
  "envelope-u8-overflow",
  "sequence + itemCount overflows a u64: 2^64 - 2 plus 2.",
  "client",
  env(meta("input-u8", { itemCount: "2", sequence: "18446744073709551614" }), [1, 2]),
);
badEnvelope(
  "envelope-binary-overflow",
  "A binary item at sequence 2^64 - 1 overflows sequence + 1.",
  "server",
  env(meta("output-binary", { cursorToken: CURSOR, itemCount: "1", sequence: U64_MAX }), [1]),
);
badEnvelope(
  "envelope-cursor-on-input",
  "cursorToken is forbidden on input kinds.",
  "client",
  env(mutate(okMeta, (m) => (m.cursorToken = CURSOR))),
);
badEnvelope(
  "envelope-cursor-missing-on-output",
  "cursorToken is required on output kinds.",
  "server",
  env(meta("output-u8", { itemCount: "3" })),
);
badEnvelope(
  "envelope-cursor-null-on-output",
  "cursorToken null on an output kind.",
  "server",
  env(meta("output-binary", { cursorToken: null, itemCount: "1" })),
);
badEnvelope("envelope-cursor-empty", "An empty cursorToken.", "server", env(meta("output-u8", { cursorToken: "", itemCount: "3" })));
badEnvelope(
  "envelope-mime-on-u8",
  "mimeType is only allowed on binary kinds.",
  "client",
  env(mutate(okMeta, (m) => (m.mimeType = "text/plain"))),
);
badEnvelope(
  "envelope-mime-on-output-u8",
  "mimeType is only allowed on binary kinds (output).",
  "server",
  env(meta("output-u8", { cursorToken: CURSOR, itemCount: "3", mimeType: "text/plain" })),
);
badEnvelope(
  "envelope-mime-no-subtype",
  "A MIME type without a subtype.",
  "client",
  env(meta("input-binary", { itemCount: "1", mimeType: "text" })),
);
badEnvelope(
  "envelope-mime-parameters",
  "A MIME type with parameters does not match the section 3.1 pattern.",
  "client",
  env(meta("input-binary", { itemCount: "1", mimeType: "text/plain; charset=utf-8" })),
);
badEnvelope(
  "envelope-mime-non-ascii",
  "A MIME type with a non-ASCII character.",
  "server",
  env(meta("output-binary", { cursorToken: CURSOR, itemCount: "1", mimeType: "image/pñg" })),
);
badEnvelope(
  "envelope-mime-null",
  "mimeType must be omitted, not null.",
  "client",
  env(meta("input-binary", { itemCount: "1", mimeType: null })),
);
generated(
  "envelope-u8-payload-over-limit",
  "A packed u8 batch of 1 MiB + 1 bytes: over the packed limit.",
  "client",
  true,
  [
    { hex: hex(envelope(canon(meta("input-u8", { itemCount: String(1024 * 1024 + 1) })), [])) },
    { repeatHex: "ab", count: 1024 * 1024 + 1 },
  ],
  "limit-exceeded",
);
generated(
  "envelope-binary-payload-over-limit",
  "A binary item of 16 MiB + 1 bytes: over the binary payload limit.",
  "server",
  true,
  [
    { hex: hex(envelope(canon(meta("output-binary", { cursorToken: CURSOR, itemCount: "1" })), [])) },
    { repeatHex: "00", count: 16 * 1024 * 1024 + 1 },
  ],
  "limit-exceeded",
);
{
  const head = '{"channel":1,"itemCount":"3","kind":"input-u8","sequence":"0","version":1,"x":"';
  const tail = '"}';
  generated(
    "envelope-metadata-over-limit",
    "Complete metadata of 64 KiB + 1 bytes: over the metadata limit.",
    "client",
    true,
    [{ hex: "00010001" }, { text: head }, { repeat: "x", count: 65537 - head.length - tail.length }, { text: tail }, { hex: "010203" }],
    "limit-exceeded",
  );
}

// ---- write ----

const GENERATOR = [
  'A case with "generate" instead of text, textHex or envelopeHex builds its bytes from',
  '{"kind":"concat","parts":[...]} by concatenating, in order, each part:',
  '{"text":S} the UTF-8 bytes of S; {"hex":H} the bytes H;',
  '{"repeat":S,"count":N} the UTF-8 bytes of S repeated N times; {"repeatHex":H,"count":N} the bytes H repeated N times;',
  '{"numbered":T,"count":N,"start":A,"separator":P} T with every "{n}" replaced by A, A+1, ... A+N-1, joined by P.',
  "For a text frame (binary false) the bytes are the message's UTF-8 text.",
].join(" ");

const files = {
  "json-messages.json": {
    description:
      "Every text message variant of protocol v1 (sections 5 and 6). text is the canonical JSON a conforming encoder emits; decoded is the message as decoders of this project present it: the same members without version, u64 values as canonical decimal strings. Decoders must accept text and encoders must reproduce it byte for byte. direction is the sender.",
    cases: jsonCases,
  },
  "binary-messages.json": {
    description:
      "Binary WebSocket messages (section 7, decisions section 3): metadata as JSON, its canonical text, the payload and the complete envelope (u32 big-endian metadata length, metadata UTF-8, payload) as lower-case hex. Decoders must accept envelopeHex; encoders must reproduce it byte for byte. direction is the sender.",
    cases: binaryCases,
  },
  "malformed.json": {
    description: [
      "Messages every decoder must reject with expectedCode (decisions section 5). direction is the claimed sender: decode as a message from that side.",
      "binary says which WebSocket frame type carries the bytes. A text frame is given as text (a JSON string), or textHex (raw bytes, for invalid UTF-8); a binary frame as envelopeHex.",
      GENERATOR,
    ].join(" "),
    cases: malformedCases,
  },
};

for (const [name, content] of Object.entries(files)) {
  writeFileSync(join(outDir, name), `${JSON.stringify(content, null, 2)}\n`);
  console.log(`${name}: ${content.cases.length} cases`);
}
