/**
 * The tests' global setup compiles the package only when `dist/` is older
 * than a source: recompiling under `pnpm test` rewrote `dist/` while
 * pack-check packed it.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isBuilt } from "./support/global-setup.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A package with one source, tsconfig.json and (unless `built` is undefined) one compiled file, at the given seconds. */
function fakePackage(times: { source: number; tsconfig: number; built?: number }): string {
  const root = mkdtempSync(join(tmpdir(), "golem-stream-global-setup-"));
  roots.push(root);
  mkdirSync(join(root, "src", "io"), { recursive: true });
  const file = (path: string, seconds: number): void => {
    writeFileSync(join(root, path), "");
    utimesSync(join(root, path), seconds, seconds);
  };
  file("src/io/a.ts", times.source);
  file("tsconfig.json", times.tsconfig);
  if (times.built !== undefined) {
    mkdirSync(join(root, "dist", "io"), { recursive: true });
    file("dist/io/a.js", times.built);
  }
  return root;
}

describe("isBuilt", () => {
  it("is true when every compiled file is newer than every source and tsconfig.json", () => {
    expect(isBuilt(fakePackage({ source: 1000, tsconfig: 1000, built: 2000 }))).toBe(true);
  });
  it("is false after a source (in a subfolder) or tsconfig.json changed, or with no dist", () => {
    expect(isBuilt(fakePackage({ source: 3000, tsconfig: 1000, built: 2000 }))).toBe(false);
    expect(isBuilt(fakePackage({ source: 1000, tsconfig: 3000, built: 2000 }))).toBe(false);
    expect(isBuilt(fakePackage({ source: 1000, tsconfig: 1000 }))).toBe(false);
  });
});
