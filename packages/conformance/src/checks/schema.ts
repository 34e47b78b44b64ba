/**
 * SchemaValue validation through real invocations (protocol section 3;
 * decisions sections 1, 2, 5 and 7): values that are well-formed JSON but do
 * not fit the pinned method schema are refused with the right code.
 */
import { randomUUID } from "node:crypto";
import type { InvocationStart, SchemaValueJson } from "@golem-stream/wire";
import { defineChecks, type Check, type CheckSpec } from "../check.js";
import { ensureRejected } from "../context.js";
import { demoStart, val } from "../demo.js";
import { inputViolation } from "./support.js";

const { record, u32, str, stream } = val;

function rejectedStart(
  name: string,
  expectation: string,
  code: string,
  build: () => InvocationStart,
  ref = "§3, decisions §1-2",
): CheckSpec {
  return {
    name,
    ref,
    expectation: `${expectation}: invocationRejected ${code}`,
    async run(ctx) {
      const conn = await ctx.connect();
      const start = build();
      conn.send(start);
      return ensureRejected(conn, [code], start.attemptId);
    },
  };
}

const count = (params: SchemaValueJson): InvocationStart => demoStart("count", params);
const withSelector = (patch: Partial<InvocationStart["selector"]>): InvocationStart => {
  const start = demoStart("count", record(u32(1), u32(0)));
  return { ...start, selector: { ...start.selector, ...patch } };
};

function badInputItem(name: string, expectation: string, value: SchemaValueJson): CheckSpec {
  return inputViolation({
    name,
    ref: "§3.3, §6.2",
    expectation: `${expectation}: after acceptance, invocationRejected validation-error with the attemptId, close 1002`,
    send: (channel) => [{ type: "inputStreamItem", channel, sequence: 0n, value }],
    codes: ["validation-error"],
  });
}

/** The codes a server may use for a message of the other encoding (text or binary) than the stream's (decisions §3). */
const WRONG_ENCODING = ["protocol-error", "invalid-message", "validation-error"];

export const schemaChecks: Check[] = defineChecks("schema", [
  rejectedStart("wrong-kind", "count with a string where u32 is declared", "validation-error", () => count(record(str("3"), u32(0)))),
  rejectedStart("u32-over-range", "count with to = 2^32", "validation-error", () => count(record(u32(4294967296), u32(0)))),
  rejectedStart("u32-negative", "count with to = -1", "validation-error", () => count(record(u32(-1), u32(0)))),
  rejectedStart("u32-fraction", "count with to = 1.5", "validation-error", () => count(record(u32(1.5), u32(0)))),
  rejectedStart("record-too-few", "count with one field where two are declared", "validation-error", () => count(record(u32(1)))),
  rejectedStart("record-too-many", "count with three fields where two are declared", "validation-error", () =>
    count(record(u32(1), u32(0), u32(0))),
  ),
  rejectedStart("not-a-record", "count with a bare u32 as method parameters", "validation-error", () => count(u32(1))),
  rejectedStart("constructor-wrong-kind", "constructor parameters record{name: u32} instead of string", "validation-error", () =>
    withSelector({ constructorParameters: record(u32(1)) }),
  ),
  rejectedStart("constructor-arity", "constructor parameters with no fields", "validation-error", () =>
    withSelector({ constructorParameters: record() }),
  ),
  rejectedStart("stream-where-scalar", "a stream reference where count declares u32", "validation-error", () =>
    count(record(stream(randomUUID()), u32(0))),
  ),
  rejectedStart("scalar-where-stream", "reverse with a string where stream<string> is declared", "validation-error", () =>
    demoStart("reverse", record(str("abc"))),
  ),
  rejectedStart(
    "stable-token-at-start",
    "reverse with a stable streamToken instead of a provisional reference",
    "validation-error",
    () => demoStart("reverse", record({ kind: "stream", value: { streamToken: "gai1_AAAA" } })),
    "§3.2",
  ),
  rejectedStart(
    "host-managed-secret",
    "a secret value (host-managed capability) as a parameter",
    "unsupported-value",
    () => count(record({ kind: "secret", value: {} }, u32(0))),
    "§3.2, decisions §5",
  ),
  rejectedStart(
    "future-value",
    "a future value as a parameter",
    "unsupported-value",
    () => count(record({ kind: "future", value: {} }, u32(0))),
    "§3.2, decisions §5",
  ),
  rejectedStart(
    "config-not-declared",
    "a config entry for the demo agent type, which declares none",
    "validation-error",
    () => ({ ...count(record(u32(1), u32(0))), config: [{ path: ["model"], value: "x" }] }),
    "§4.2, decisions §7",
  ),
  rejectedStart(
    "unknown-method",
    "an unknown method of the echo agent type",
    "not-found",
    () => withSelector({ method: "no-such-method" }),
    "decisions §5, §7",
  ),
  rejectedStart(
    "unknown-agent-type",
    "an unknown agent type",
    "not-found",
    () => withSelector({ agentType: "no-such-agent" }),
    "decisions §5, §7",
  ),
  rejectedStart(
    "unknown-application",
    "an unknown application",
    "not-found",
    () => withSelector({ application: "no-such-application" }),
    "decisions §5, §7",
  ),
  rejectedStart(
    "unknown-environment",
    "an unknown environment",
    "not-found",
    () => withSelector({ environment: "no-such-environment" }),
    "decisions §5, §7",
  ),
  badInputItem("item-wrong-kind", "a u32 item on reverse's stream<string> input", u32(7)),
  badInputItem("item-record", "a record item on reverse's stream<string> input", record(str("x"))),
  inputViolation({
    name: "text-item-on-binary-stream",
    ref: "decisions §3",
    expectation:
      "a text inputStreamItem on digest's direct-binary stream<u8> input is a protocol violation: invocationRejected with the attemptId, close 1002",
    method: "digest",
    send: (channel) => [{ type: "inputStreamItem", channel, sequence: 0n, value: { kind: "u8", value: 1 } }],
    codes: WRONG_ENCODING,
  }),
  inputViolation({
    name: "binary-item-on-value-stream",
    ref: "decisions §3",
    expectation:
      "an input-u8 binary message on reverse's stream<string> input is a protocol violation: invocationRejected with the attemptId, close 1002",
    send: (channel) => [{ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array([65]) }],
    codes: WRONG_ENCODING,
  }),
]);
