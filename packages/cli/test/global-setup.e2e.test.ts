/**
 * The tests' global setup compiles the package only when `dist/` is older
 * than a source: recompiling under `pnpm test` rewrote `dist/` while
 * pack-check packed it. It bundles again when the bundle is older than
 * what it inlines.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isBuilt, isBundled } from "./support/global-setup.js";

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

/** A workspace with `pkgs/cli` (depending on `pkgs/wire`), each file written at the given seconds (undefined: absent). */
function fakeWorkspace(times: { compiled: number; bundle?: number; wire: number }): string {
  const root = mkdtempSync(join(tmpdir(), "golem-stream-global-setup-"));
  roots.push(root);
  const file = (path: string, seconds: number, text = ""): void => {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
    utimesSync(join(root, path), seconds, seconds);
  };
  file("pkgs/cli/package.json", 1, JSON.stringify({ dependencies: { "@golem-stream/wire": "workspace:^", commander: "^14.0.0" } }));
  file("pkgs/cli/dist/bin.js", times.compiled);
  if (times.bundle !== undefined) {
    file("pkgs/cli/dist/golem-stream.js", times.bundle);
    file("pkgs/cli/dist/chunks/invoke-X.js", times.bundle);
  }
  file("pkgs/wire/dist/index.js", times.wire);
  return join(root, "pkgs", "cli");
}

describe("isBundled", () => {
  it("is true when the bundle is newer than the tsc output and the dist/ of the workspace packages it depends on", () => {
    expect(isBundled(fakeWorkspace({ compiled: 1000, wire: 1000, bundle: 2000 }))).toBe(true);
  });
  it("is false without a bundle, after a recompile, or after a dependency was rebuilt", () => {
    expect(isBundled(fakeWorkspace({ compiled: 1000, wire: 1000 }))).toBe(false);
    expect(isBundled(fakeWorkspace({ compiled: 3000, wire: 1000, bundle: 2000 }))).toBe(false);
    expect(isBundled(fakeWorkspace({ compiled: 1000, wire: 3000, bundle: 2000 }))).toBe(false);
  });
});
