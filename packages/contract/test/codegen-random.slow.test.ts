/**
 * `contractSource` round-trips (codegen.test.ts) over (c) random catalogue
 * entries. Each run transpiles a module with TypeScript: seconds in all, so
 * this runs with the end-to-end tests, one package at a time (vitest.shared.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { roundTrip } from "./support/generated-module.js";
import { catalogueEntryArb } from "./support/graph-arbitrary.js";

describe("contractSource round-trips", () => {
  // Each run transpiles a module with TypeScript: 50 runs, and time for a loaded machine.
  it("(c) random catalogue entries", { timeout: 180_000 }, () => {
    fc.assert(
      fc.property(fc.array(catalogueEntryArb, { minLength: 1, maxLength: 3 }), (entries) => {
        const unique = entries.filter((entry, i) => entries.findIndex((other) => other.name === entry.name) === i);
        for (const found of Object.values(roundTrip(unique))) expect(found).toEqual([]);
      }),
      { numRuns: 50 },
    );
  });
});
