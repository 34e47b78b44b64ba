/**
 * A consumer project outside the workspace: its own directory under the OS
 * temp directory, a package.json naming one @golem-stream package by its
 * tarball, and `npm install` as a user would run it. The sibling packages it
 * depends on come from their tarballs too (npm `overrides`), never from the
 * registry or the workspace.
 *
 * Third-party dependencies come from npm's cache when it has them
 * (`--prefer-offline`). Install scripts are skipped: better-sqlite3, the one
 * native module, is pinned to the workspace's version and given the
 * workspace's compiled binary, so the check does not compile SQLite again.
 */
import { execFile } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import type { Tarball } from "./tarballs.js";
import { workspaceRoot } from "./tarballs.js";

const run = promisify(execFile);

function workspaceBetterSqlite(): { version: string; binary: string } {
  const require = createRequire(path.join(workspaceRoot, "packages/server/package.json"));
  const manifest = require.resolve("better-sqlite3/package.json");
  const version = (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
  return { version, binary: path.join(path.dirname(manifest), "build/Release/better_sqlite3.node") };
}

/**
 * The Node that runs the consumers: this one, or `PACK_CHECK_NODE` (a path to another node
 * binary, such as the lowest version the packages claim, 20.19.0).
 */
export const consumerNode = process.env["PACK_CHECK_NODE"] ?? process.execPath;

/**
 * The environment without what pnpm and turbo set for the workspace (npm_config_*, npm_package_*),
 * which would steer npm, and with `consumerNode` first on PATH (for the CLI's `#!/usr/bin/env node`).
 */
export function consumerEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  return { ...env, PATH: `${path.dirname(consumerNode)}${path.delimiter}${env["PATH"] ?? ""}` };
}

/** How a consumer installs: `omitOptional` is `npm install --omit=optional`, as a PostgreSQL cluster node may install. */
export interface InstallOptions {
  readonly omitOptional?: boolean;
}

export async function installConsumer(
  directory: string,
  fixtures: string,
  packageName: string,
  tarballs: readonly Tarball[],
  options: InstallOptions = {},
): Promise<void> {
  mkdirSync(directory, { recursive: true });
  cpSync(fixtures, directory, { recursive: true });
  const file = (name: string) => {
    const tarball = tarballs.find((candidate) => candidate.name === name);
    if (tarball === undefined) throw new Error(`no tarball for ${name}`);
    return `file:${tarball.file}`;
  };
  const overrides: Record<string, string> = { "better-sqlite3": workspaceBetterSqlite().version };
  for (const tarball of tarballs) if (tarball.name !== packageName) overrides[tarball.name] = file(tarball.name);
  writeFileSync(
    path.join(directory, "package.json"),
    `${JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module", dependencies: { [packageName]: file(packageName) }, overrides }, null, 2)}\n`,
  );
  await npmInstall(directory, options);
}

/** Adds another of the packed packages to an installed consumer, as `npm install <name>` would. */
export async function addDependency(directory: string, packageName: string, tarballs: readonly Tarball[]): Promise<void> {
  const manifestFile = path.join(directory, "package.json");
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as {
    dependencies: Record<string, string>;
    overrides: Record<string, string>;
  };
  const tarball = tarballs.find((candidate) => candidate.name === packageName);
  if (tarball === undefined) throw new Error(`no tarball for ${packageName}`);
  // npm refuses an override of a direct dependency: the tarball becomes the dependency itself.
  delete manifest.overrides[packageName];
  manifest.dependencies[packageName] = `file:${tarball.file}`;
  writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
  await npmInstall(directory);
}

async function npmInstall(directory: string, options: InstallOptions = {}): Promise<void> {
  const omit = options.omitOptional === true ? ["--omit=optional"] : [];
  await run("npm", ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", ...omit], {
    cwd: directory,
    env: consumerEnv(),
  });
  shareSqliteBinary(directory);
}

/** Gives an installed better-sqlite3 (pinned to the workspace's version) the workspace's compiled binary. */
export function shareSqliteBinary(directory: string): void {
  const installedSqlite = path.join(directory, "node_modules/better-sqlite3");
  if (!existsSync(installedSqlite)) return;
  mkdirSync(path.join(installedSqlite, "build/Release"), { recursive: true });
  copyFileSync(workspaceBetterSqlite().binary, path.join(installedSqlite, "build/Release/better_sqlite3.node"));
}
