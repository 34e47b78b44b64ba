#!/usr/bin/env node
/**
 * Fails when the project's text points at something that is not there: a file
 * that was renamed, split or moved while the docs and comments that name it
 * stayed as they were.
 *
 *   node scripts/check-doc-references.mjs        # run by .ci/run; a few seconds
 *
 * What it checks:
 * - Markdown links: every relative `[text](path)` (and `![alt](path)`, and a
 *   reference definition `[name]: path`) names a file or folder that exists;
 *   a `#anchor` into a Markdown file (or `#anchor` alone, into the same file)
 *   names one of its headings, slugged as GitHub does, or an HTML `id`/`name`.
 * - Paths in inline code: a word in backticks that looks like a repository path
 *   (contains `/` and ends in one of PATH_EXTENSIONS, or starts with one of
 *   ROOT_FOLDERS, both in doc-references/resolve.mjs, or with `src/`, `test/`
 *   or `bench/`) exists. A bare file
 *   name (`live-session.ts`, no `/`) must be the name of some file in the
 *   repository (for a file in NAME_SCOPES, of a file in its folder).
 * - The same paths written outside code (`see docs/agents.md`), and bare
 *   `.ts`/`.mjs` names there (a bare `Node.js` in prose is no file name).
 * - Test files named without their extension (`loopback.e2e.test`), in
 *   Markdown and in source comments: a file of that name and a script
 *   extension exists (a test renamed to `.e2e.test.ts` takes its mentions along).
 * - File names in comments of packages/*\/src/**\/*.ts (`//` and `/* *\/`
 *   comments, found with TypeScript's parser so strings and regular
 *   expressions are not mistaken for comments): every `.ts` or `.mjs` name
 *   resolves as above.
 * - Package names of the workspace (`@golem-stream/wire/internal`), in
 *   Markdown (code blocks included: an import of a workspace package is never
 *   a user's own name) and in source comments: the package exists and exports
 *   that entry point (doc-references/package-entries.mjs).
 *
 * Where a path may be relative to (first match wins): the repository root, the
 * folder of the file that names it, the package the file belongs to (the
 * nearest folder with a package.json: `src/x.ts` in packages/server/README.md
 * is packages/server/src/x.ts), and for a source comment the package's `src/`.
 * A path that starts with `./` or `../` is relative to the file's folder only;
 * one that starts with `src/`, `test/` or `bench/` in a file outside any package
 * (docs/*.md) may be in any package. A path that names none of those roots
 * (`sessions/session-cache.ts`) passes when some file's path ends with it.
 *
 * What it reads: the Markdown files and package sources git knows of or would
 * add (`git ls-files --cached --others --exclude-standard`). Not read:
 * CHANGELOG.md files (the released record), .changeset/ (release notes to be),
 * packages/*\/api/*.api.md (generated API reports). Fenced code blocks in
 * Markdown are skipped: they show commands and code, often a user's own files.
 * Words with glob or placeholder characters (`*.test.ts`, `<pkg>/src`) and
 * built output (`dist/`) are not paths to check.
 *
 * A name that must stay and is deliberately not a file of this repository
 * goes into ALLOWED with its reason; an entry that no longer matches anything
 * fails the run, so the list only shrinks. Before it reads anything the check
 * runs itself over the SAMPLES of doc-references/samples.mjs, so a pattern
 * broken by an edit fails the run instead of passing everything.
 *
 * The parts: doc-references/resolve.mjs (the tree and how a name resolves),
 * markdown.mjs (links, anchors, paths in Markdown), comments.mjs (names in
 * source comments), check-tree.mjs (which files are read), samples.mjs.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkTree, isCheckedMarkdown, isCheckedSource } from "./doc-references/check-tree.mjs";
import { makeTree } from "./doc-references/resolve.mjs";
import { checkSamples } from "./doc-references/samples.mjs";

const root = join(fileURLToPath(import.meta.url), "..", "..");

/** Names that look like repository files and are not, each with its reason: `{ name, in?, reason }`. */
const ALLOWED = [
  { name: "test/some.test.ts", reason: "stands for any test file in the command that runs one" },
  { name: "keyring.json", reason: "written by the server into its data directory at run time" },
  { name: "./data/keyring.json", reason: "written by the server into its data directory at run time" },
  { name: "./agents.js", reason: "the user's own agents module, passed to `golem-stream serve --agents`" },
  { name: "./src/agents.ts", reason: "the user's own agents module, passed to `golem-stream serve --agents`" },
];

/**
 * Markdown files whose bare file names are all in one folder, as the file itself says (its own
 * sentence names the folder): a name found only elsewhere is a stale one.
 */
const NAME_SCOPES = { "docs/client-requirements.md": "packages/client/" };

/** The files git knows of or would add; the check needs git (it reads the tree the way a commit will hold it). */
function listFiles() {
  let out;
  try {
    out = gitFiles();
  } catch (error) {
    console.error(
      `check-doc-references: cannot list the repository's files with git: ${error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(1);
  }
  return [...new Set(out.split("\0").filter((path) => path !== ""))].filter((path) => existsSync(join(root, path)));
}

function gitFiles() {
  return execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "ignore"],
  });
}

const broken = checkSamples();
if (broken.length > 0) {
  console.error("check-doc-references: the check does not do what its samples say:");
  for (const line of broken) console.error(`  ${line}`);
  process.exit(1);
}

const tree = makeTree(
  listFiles().filter((path) => statSync(join(root, path)).isFile()),
  (path) => readFileSync(join(root, path), "utf8"),
  { allowed: ALLOWED, scopes: NAME_SCOPES },
);
const checked = tree.paths.filter((path) => isCheckedMarkdown(path) || isCheckedSource(path)).length;
if (checked === 0) {
  console.error("check-doc-references: no files found to read");
  process.exit(1);
}
const found = checkTree(tree);
for (const entry of ALLOWED) {
  if (!tree.used.has(entry)) found.push({ file: "scripts/check-doc-references.mjs", line: 0, kind: "stale allowance", text: entry.name });
}
if (found.length > 0) {
  console.error(`check-doc-references: ${found.length} reference(s) to files, folders or headings that do not exist:`);
  for (const hit of found) console.error(`  ${hit.file}:${hit.line}: ${hit.kind}: ${hit.text}`);
  process.exit(1);
}
console.log(`check-doc-references: ${checked} files, every link, path and file name resolves`);
