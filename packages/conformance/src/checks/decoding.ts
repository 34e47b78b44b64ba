/**
 * Strict decoding (protocol section 2, section 7; decisions section 3 and 5),
 * one check per client-direction case of malformed.json. Text cases are sent
 * as the first message of a fresh connection; binary cases after the
 * acceptance of a `digest` session, so they reach the envelope decoder rather
 * than the first-message rule.
 */
import { defineChecks, type Check } from "../check.js";
import { ensureViolation } from "../context.js";
import { inputStart } from "../demo.js";
import { loadVectors, malformedBytes, type MalformedCase } from "../vectors.js";

/** ws closes with 1007 on a text frame that is not UTF-8, before any application code sees it. */
const UTF8_CASES = new Set(["invalid-utf8", "overlong-utf8", "encoded-surrogate-utf8", "truncated-utf8"]);

function closeCodesFor(c: MalformedCase): number[] {
  if (c.expectedCode === "limit-exceeded") return [1002, 1009];
  if (UTF8_CASES.has(c.name)) return [1002, 1007];
  return [1002];
}

function textCase(c: MalformedCase): Check {
  return defineChecks("decoding", [
    {
      name: c.name,
      ref: c.expectedCode === "limit-exceeded" ? "§2, §12, decisions §6" : "§2",
      expectation: `first message "${c.name}" (${c.description}) is refused: ${c.expectedCode} if diagnosed, then close ${closeCodesFor(c).join("/")}`,
      async run(ctx) {
        const conn = await ctx.connect();
        conn.sendRaw(malformedBytes(c), false);
        return ensureViolation(conn, { codes: [c.expectedCode], closeCodes: closeCodesFor(c) });
      },
    },
  ])[0]!;
}

function binaryCase(c: MalformedCase): Check {
  return defineChecks("decoding", [
    {
      name: `binary-${c.name}`,
      ref: "§7, decisions §3",
      expectation: `binary message "${c.name}" (${c.description}) after acceptance: invocationRejected ${c.expectedCode} with the accepted attemptId (if diagnosed), then close ${closeCodesFor(c).join("/")}`,
      async run(ctx) {
        const { start } = inputStart("digest");
        const { conn } = await ctx.start(start);
        conn.sendRaw(malformedBytes(c), true);
        return ensureViolation(conn, { codes: [c.expectedCode], closeCodes: closeCodesFor(c), attemptId: start.attemptId });
      },
    },
  ])[0]!;
}

export function decodingChecks(): Check[] {
  const cases = loadVectors<{ cases: MalformedCase[] }>("malformed.json").cases.filter((c) => c.direction === "client");
  return cases.map((c) => (c.binary ? binaryCase(c) : textCase(c)));
}
