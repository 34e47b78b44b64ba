#!/usr/bin/env node
/**
 * Fails when the project's text cites a work item instead of giving a reason:
 * an issue or pull-request number ("issue #" or "Issue" and a number, an
 * ".../issues/" URL, "PR #" and a number) or a work session ("Session" and a
 * number). Docs are
 * reference for a newcomer and comments say why; which issue or session
 * changed something is what git history is for.
 *
 *   node scripts/check-project-text.mjs        # run by .ci/run; about a second
 *
 * What it reads: every file git knows of or would add (`git ls-files --cached
 * --others --exclude-standard`, so node_modules, dist, .git and everything
 * else .gitignore names are out), or, without git, every file under the root
 * except the folders in SKIPPED_DIRS. Files with a NUL byte are binary and
 * skipped. Not read: CHANGELOG.md files (the released record, written from
 * changesets at release and not rewritten afterwards; the changesets
 * themselves are read). This file is read too: its samples write each number
 * as <n> (filled in by `numbered` when they are used), so they hold no
 * citation themselves.
 *
 * Numbered things that are not work items pass: "RFC 4648 section 10",
 * "HTTP 503", "decisions §6", "this session", "issued 3 tokens". A phrase that
 * must stay and still matches goes into ALLOWED with its reason.
 *
 * Before it reads anything it checks its own patterns against SAMPLES, so a
 * pattern broken by an edit fails the run instead of passing everything.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");

/**
 * Between a word and its number: spaces, or a line break with the next line's
 * comment marker (` * `, `//`, `#`) or Markdown quote (`>`). Not operators:
 * `SESSIONS * 4` and `sessions > 0` are code.
 */
const GAP = String.raw`(?:[ \t]*\r?\n[ \t]*(?:\*(?!/)|//|#(?!\d)|>)?[ \t]*|[ \t]+)`;

/** Each pattern names what it catches, for the report. */
const PATTERNS = [
  ["an issue number", new RegExp(String.raw`\bissues?${GAP}?#?\d+\b|/issues/\d+\b`, "gi")],
  ["a pull-request number", new RegExp(String.raw`\b(?:PRs?|pull requests?)${GAP}?#\d+\b|\bpull requests?${GAP}\d+\b|/pull/\d+\b`, "gi")],
  ["a work-session number", new RegExp(String.raw`\bsessions?${GAP}\d+\b`, "gi")],
];

/** `text` with every `<n>` written as the number n: how this file spells a citation without making one. */
const numbered = (text) => text.replace(/<(\d+)>/g, "$1");

/** Phrases that match a pattern and are not work items. */
const ALLOWED = [
  {
    text: numbered("session <1> -> cursor 3"),
    reason: "token kind byte values in the protocol's token vectors (kind 1 is a session token, 3 a cursor)",
  },
];

const SAMPLES = {
  hits: [
    "see issue #<17>",
    "Issue <13>: the budget",
    "(issue #<16>, part 3)",
    "a limit (issues <5> and 6)",
    "Since issue\n * #<17> the sync",
    "https://github.com/golemcloud/golem-stream/issues/<17>",
    "fixed in PR #<42>",
    "Session <8>: packed rows",
    "since session <10> every row",
    "// measured (throughput.md, session\n// <7>)",
    "  # issue\n  # <12> in a shell comment",
    "> Session\n> <9> in a quote",
  ].map(numbered),
  passes: [
    "RFC 4648 section 10",
    "refused with HTTP 503",
    "protocol section 9",
    "decisions §6",
    "this session's token, 24 fields",
    "the server issued 3 tokens",
    "Bit 1 of the kind byte (session <1> -> cursor 3).",
    "200 concurrent sessions, 64 MiB each",
    'expect(seen).toEqual(["#1", "#2"])',
    "const perNode = SESSIONS * 4;",
    "expect(sessions > 0).toBe(true)",
    "const issues = [];\n/* 4 */",
  ].map(numbered),
};

/** Every hit in `text`: pattern name, 1-based line, the matched words. */
function findCitations(text) {
  const allowedRanges = [];
  for (const { text: phrase } of ALLOWED) {
    for (let at = text.indexOf(phrase); at !== -1; at = text.indexOf(phrase, at + 1)) allowedRanges.push([at, at + phrase.length]);
  }
  const hits = [];
  for (const [name, pattern] of PATTERNS) {
    pattern.lastIndex = 0;
    for (const match of text.matchAll(pattern)) {
      const start = match.index;
      const end = start + match[0].length;
      if (allowedRanges.some(([from, to]) => start >= from && end <= to)) continue;
      const line = text.slice(0, start).split("\n").length;
      hits.push({ name, line, words: match[0].replace(/\s+/g, " ") });
    }
  }
  return hits;
}

function checkSamples() {
  const wrong = [];
  for (const sample of SAMPLES.hits) if (findCitations(sample).length === 0) wrong.push(`not caught: ${JSON.stringify(sample)}`);
  for (const sample of SAMPLES.passes) {
    const hits = findCitations(sample);
    if (hits.length > 0) wrong.push(`caught by mistake (${hits[0].name}): ${JSON.stringify(sample)}`);
  }
  return wrong;
}

const SKIPPED_DIRS = new Set([".git", "node_modules", "dist", ".turbo", "coverage", "test-results", "test-artifacts", "tmp"]);

function walk(dir, files) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) walk(join(dir, entry.name), files);
    } else if (entry.isFile()) {
      files.push(relative(root, join(dir, entry.name)).split(sep).join("/"));
    }
  }
  return files;
}

function projectFiles() {
  try {
    const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "ignore"],
    });
    return [...new Set(out.split("\0").filter((path) => path !== ""))];
  } catch {
    return walk(root, []);
  }
}

function isRead(path) {
  if (path === "CHANGELOG.md" || path.endsWith("/CHANGELOG.md")) return false;
  return !path.split("/").some((part) => SKIPPED_DIRS.has(part));
}

const broken = checkSamples();
if (broken.length > 0) {
  console.error("check-project-text: the patterns do not do what their samples say:");
  for (const line of broken) console.error(`  ${line}`);
  process.exit(1);
}

let read = 0;
const found = [];
for (const path of projectFiles().filter(isRead)) {
  const full = join(root, path);
  if (!existsSync(full) || !statSync(full).isFile()) continue; // deleted in the work tree
  const bytes = readFileSync(full);
  if (bytes.subarray(0, 8192).includes(0)) continue; // binary
  read++;
  for (const hit of findCitations(bytes.toString("utf8"))) found.push(`${path}:${hit.line}: ${hit.name}: "${hit.words}"`);
}
if (read === 0) {
  console.error("check-project-text: no files found to read");
  process.exit(1);
}
if (found.length > 0) {
  console.error(`check-project-text: ${found.length} citation(s) of issues, pull requests or work sessions; say the reason instead:`);
  for (const line of found) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`check-project-text: ${read} files, no issue, pull-request or session numbers`);
