#!/usr/bin/env node
/**
 * Keeps source files small enough to read in one sitting: a file under a
 * package's `src/` longer than MAX_LINES must say, in the comment that opens
 * it, why it is one file (a line starting `Why one file:`). Most long files
 * hold several jobs and should be split along their seams instead; the few
 * that stay long are one state machine or one decoder whose parts share
 * private state, and the reason tells the next reader so.
 *
 * Run by `pnpm lint` (scripts/lint.sh). Prints each offending file with its
 * length and exits 1.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const MAX_LINES = 400;
const REASON = /^\s*\*\s*Why one file:/m;
const root = join(import.meta.dirname, "..");

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|mts|tsx)$/.test(name) && !name.endsWith(".d.ts")) yield path;
  }
}

/** The comment block a file opens with (after a shebang), or "" when it opens with code. */
function header(text) {
  const start = text.replace(/^#!.*\n/, "").trimStart();
  if (!start.startsWith("/*")) return "";
  const end = start.indexOf("*/");
  return end < 0 ? "" : start.slice(0, end);
}

const offenders = [];
const packages = join(root, "packages");
for (const name of readdirSync(packages)) {
  const src = join(packages, name, "src");
  try {
    if (!statSync(src).isDirectory()) continue;
  } catch {
    continue;
  }
  for (const file of sources(src)) {
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines > MAX_LINES && !REASON.test(header(text))) offenders.push(`${relative(root, file)}: ${lines} lines`);
  }
}

if (offenders.length > 0) {
  console.error(
    `Source files over ${MAX_LINES} lines without a reason: split each along its seams, or say in the\n` +
      `comment it opens with why it is one file (a line starting " * Why one file:").\n` +
      offenders.map((line) => `  ${line}`).join("\n"),
  );
  process.exit(1);
}
console.log(`check-file-size: every source file is at most ${MAX_LINES} lines or says why it is one file`);
