/**
 * The limits every decoder reads are frozen at run time, not only for the
 * compiler: no module in the process can raise or switch off a bound.
 */
import { describe, expect, it } from "vitest";
import { LIMITS, decodeClientMessage, parseStrictJson } from "../src/index.js";

const nested = (levels: number): string => "[".repeat(levels) + "]".repeat(levels);

describe("LIMITS", () => {
  it("is frozen: assigning a bound fails and leaves the decoders' bounds as they were", () => {
    const limits = LIMITS as unknown as Record<string, number>;
    const before = { ...limits };
    let refused = false;
    try {
      limits["maxJsonDepth"] = 1e6;
      limits["maxTextMessageBytes"] = Number.POSITIVE_INFINITY;
    } catch (error) {
      // Modules are strict code: writing to a frozen object throws.
      refused = error instanceof TypeError;
    } finally {
      // Should the writes have landed, the other tests of this file still see the real bounds.
      if (!Object.isFrozen(limits)) Object.assign(limits, before);
    }
    expect(Object.isFrozen(LIMITS)).toBe(true);
    expect(refused).toBe(true);
    expect(LIMITS.maxJsonDepth).toBe(128);
  });

  it("keeps the depth bound after a try to raise it", () => {
    try {
      (LIMITS as unknown as Record<string, number>)["maxJsonDepth"] = 1e6;
    } catch {
      // Refused, as it must be.
    }
    expect(parseStrictJson(nested(128))).toBeDefined();
    expect(() => parseStrictJson(nested(129))).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
    const message = `{"attemptId":"ca7e5a82-2064-4c18-8359-806145c1562f","config":${nested(200)},"type":"invocationStart","version":1}`;
    expect(() => decodeClientMessage(message, false)).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
  });
});
