#!/usr/bin/env node
// `pnpm pack-tarballs DIR`: the packages of this checkout as npm tarballs, for a project outside
// it before they are published. Run `pnpm build` first. Packs every publishable package with
// `pnpm pack` (which turns `workspace:` ranges into versions, as publishing does) into DIR and
// prints, for each, the one `npm install` line that installs it together with the sibling
// packages it depends on: npm takes a sibling from a tarball given in the same install, where it
// would otherwise look for the unpublished version on the registry. packages/pack-check installs
// its consumers from these same tarballs.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const [target, ...extra] = process.argv.slice(2);
if (target === undefined || target === "--help" || target === "-h" || extra.length > 0) {
  process.stderr.write("usage: pnpm pack-tarballs DIR   (after pnpm build; DIR is relative to the folder you are in)\n");
  process.exit(target === "--help" || target === "-h" ? 0 : 2);
}
// pnpm runs a root script at the root; INIT_CWD is the folder it was typed in.
const destination = resolve(process.env["INIT_CWD"] ?? process.cwd(), target);

const packages = readdirSync(join(root, "packages"))
  .map((entry) => join(root, "packages", entry))
  .filter((directory) => existsSync(join(directory, "package.json")))
  .map((directory) => ({ directory, manifest: JSON.parse(readFileSync(join(directory, "package.json"), "utf8")) }))
  .filter(({ manifest }) => manifest.private !== true);

const unbuilt = packages.filter(({ directory }) => !existsSync(join(directory, "dist")));
if (unbuilt.length > 0) {
  process.stderr.write(`pack-tarballs: ${unbuilt.map(({ manifest }) => manifest.name).join(", ")} not built: run pnpm build first\n`);
  process.exit(2);
}

mkdirSync(destination, { recursive: true });
/** Package name → absolute tarball path. */
const tarballs = new Map();
for (const { directory, manifest } of packages) {
  const printed = execFileSync("pnpm", ["pack", "--pack-destination", destination], {
    cwd: directory,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const file = printed.trim().split("\n").at(-1) ?? "";
  if (!file.endsWith(".tgz")) throw new Error(`pnpm pack in ${directory} printed no tarball: ${printed}`);
  tarballs.set(manifest.name, resolve(destination, file));
}

/** The package and every sibling it needs to run (dependencies and optional ones, not optional peers), in a stable order. */
function closure(name, seen = new Set()) {
  if (seen.has(name)) return seen;
  seen.add(name);
  const manifest = packages.find((candidate) => candidate.manifest.name === name)?.manifest ?? {};
  for (const dependency of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) {
    if (tarballs.has(dependency)) closure(dependency, seen);
  }
  return seen;
}

const lines = [
  `Packed ${tarballs.size} packages into ${destination}.`,
  "",
  "In your project, install a package with the siblings it needs, from these tarballs:",
  "",
];
const install = (names) =>
  `  npm install ${[...names.reduce((all, name) => closure(name, all), new Set())].map((each) => tarballs.get(each)).join(" ")}`;
for (const name of tarballs.keys()) lines.push(name, install([name]));
lines.push(
  "@golem-stream/cli with @golem-stream/server (for `golem-stream serve`)",
  install(["@golem-stream/cli", "@golem-stream/server"]),
);
lines.push(
  "",
  "npm records them as file: dependencies; once the packages are published, `npm install <name>` replaces them.",
  "The CLI: install it into a project this way and run `npx golem-stream`; a global install (-g) cannot",
  "take the siblings from tarballs.",
  "",
);
process.stdout.write(lines.join("\n"));
