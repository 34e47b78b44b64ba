#!/usr/bin/env node
/**
 * Keeps the first release's notes whole: while a published package is still at
 * version 0.0.0 (nothing released yet), its only changeset is
 * `.changeset/release-0.1.0-<package>.md`, the summary of what 0.1.0 offers. A
 * change to unreleased behaviour amends that summary; a separate changeset
 * would be a note about a state no user ever had ("before, …"), and the
 * changelog would become a work log. Once a package has been released, any
 * number of changesets may name it.
 *
 *   node scripts/check-changesets.mjs        # run by .ci/run; well under a second
 *
 * It also checks that every unreleased published package has its summary, and
 * that each summary names its own package (and only it) with a `minor` bump.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const changesetDir = join(root, ".changeset");

/** The packages a changeset's front matter names, with their bumps. */
function frontMatterBumps(text) {
  const match = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  if (match === null) return undefined;
  const bumps = new Map();
  for (const line of match[1].split(/\r?\n/)) {
    const entry = /^\s*["']?(@[^"':]+)["']?\s*:\s*(major|minor|patch)\s*$/.exec(line);
    if (entry !== null) bumps.set(entry[1], entry[2]);
  }
  return bumps;
}

function publishedPackages() {
  const packages = new Map();
  for (const folder of readdirSync(join(root, "packages"))) {
    const manifestPath = join(root, "packages", folder, "package.json");
    if (!existsSync(manifestPath)) continue;
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (manifest.private === true) continue;
    packages.set(manifest.name, { folder, version: manifest.version });
  }
  return packages;
}

function check() {
  const problems = [];
  const packages = publishedPackages();
  const unreleased = new Map([...packages].filter(([, info]) => info.version === "0.0.0"));
  const summaryOf = (name) => `release-0.1.0-${name.replace(/^@golem-stream\//, "")}.md`;
  const summaries = new Set([...unreleased.keys()].map(summaryOf));

  for (const file of readdirSync(changesetDir)) {
    if (!file.endsWith(".md") || file === "README.md") continue;
    const bumps = frontMatterBumps(readFileSync(join(changesetDir, file), "utf8"));
    if (bumps === undefined) {
      problems.push(`${file}: no front matter`);
      continue;
    }
    if (summaries.has(file)) {
      const own = [...unreleased.keys()].find((name) => summaryOf(name) === file);
      if (bumps.size !== 1 || bumps.get(own) !== "minor") {
        problems.push(`${file}: a release summary names only ${own}, as "minor"`);
      }
      continue;
    }
    for (const name of bumps.keys()) {
      if (unreleased.has(name)) {
        problems.push(`${file}: ${name} is not released yet; amend .changeset/${summaryOf(name)} instead of adding a changeset`);
      }
    }
  }
  for (const summary of summaries) {
    if (!existsSync(join(changesetDir, summary))) problems.push(`.changeset/${summary} is missing`);
  }
  return problems;
}

const problems = check();
if (problems.length > 0) {
  console.error("check-changesets: changesets of unreleased packages:");
  for (const problem of problems) console.error(`  ${problem}`);
  process.exit(1);
}
console.log("check-changesets: every unreleased package has one release summary and nothing else");
