/**
 * better-sqlite3 is an optional dependency: the SQLite store loads it when it opens, and an
 * install without it gets an error that says what to install instead of a bare MODULE_NOT_FOUND.
 */
import { describe, expect, it } from "vitest";
import { betterSqlite3, loadBetterSqlite3 } from "../src/store/better-sqlite3.js";

function missing(name: string): never {
  throw Object.assign(new Error(`Cannot find module '${name}'`), { code: "MODULE_NOT_FOUND" });
}

describe("loading better-sqlite3", () => {
  it("returns the installed module", () => {
    expect(typeof betterSqlite3()).toBe("function");
    expect(betterSqlite3()).toBe(betterSqlite3());
  });

  it("says how to install it when it is missing, keeping the loader's error as the cause", () => {
    let thrown: unknown;
    try {
      loadBetterSqlite3(missing);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect((thrown as Error).message).toMatch(/needs better-sqlite3.*npm install better-sqlite3/);
    expect(((thrown as Error).cause as { code?: string }).code).toBe("MODULE_NOT_FOUND");
  });

  it("lets any other failure through as it is (a binary built for another Node)", () => {
    const abiMismatch = new Error("The module was compiled against a different Node.js version");
    expect(() =>
      loadBetterSqlite3(() => {
        throw abiMismatch;
      }),
    ).toThrow(abiMismatch);
  });
});
