#!/usr/bin/env node
/**
 * Fails when the project's text points at something that is not there: a file
 * that was renamed, split or moved while the docs and comments that name it
 * stayed as they were.
 *
 *   node scripts/check-doc-references.mjs        # run by .ci/run; about a second
 *
 * What it checks:
 * - Markdown links: every relative `[text](path)` (and `![alt](path)`, and a
 *   reference definition `[name]: path`) names a file or folder that exists;
 *   a `#anchor` into a Markdown file (or `#anchor` alone, into the same file)
 *   names one of its headings, slugged as GitHub does, or an HTML `id`/`name`.
 * - Paths in inline code: a word in backticks that looks like a repository path
 *   (contains `/` and ends in one of PATH_EXTENSIONS, or starts with one of
 *   ROOT_FOLDERS) exists. A bare file name (`live-session.ts`, no `/`) must be
 *   the name of some file in the repository.
 * - The same paths written outside code (`see docs/agents.md`), and bare
 *   `.ts`/`.mjs` names there (a bare `Node.js` in prose is no file name).
 * - Test files named without their extension (`loopback.e2e.test`), in
 *   Markdown and in source comments: a file of that name and a script
 *   extension exists (a test renamed to `.e2e.test.ts` takes its mentions along).
 * - File names in comments of packages/*\/src/**\/*.ts (`//` and `/* *\/`
 *   comments, found with TypeScript's scanner so strings and regular
 *   expressions are not mistaken for comments): every `.ts` or `.mjs` name
 *   resolves as above.
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
 * goes into ALLOWED with its reason. Before it reads anything the check runs
 * itself over SAMPLES, so a pattern broken by an edit fails the run instead of
 * passing everything.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = join(fileURLToPath(import.meta.url), "..", "..");

/** A word with a `/` and one of these endings is a file path. */
const PATH_EXTENSIONS = [".ts", ".mts", ".cts", ".mjs", ".js", ".cjs", ".md", ".json", ".sh"];
/** A word starting with one of these is a repository path, whatever it ends with. */
const ROOT_FOLDERS = ["packages/", "docs/", "scripts/", "fixtures/", ".ci/", "examples/", "release/"];
/** In source comments only these endings are file names (`.js` there is mostly an import specifier). */
const COMMENT_EXTENSIONS = [".ts", ".mjs"];

/** Names that look like repository files and are not, each with its reason: `{ name, in?, reason }`. */
const ALLOWED = [
  { name: "test/some.test.ts", reason: "stands for any test file in the command that runs one" },
  { name: "keyring.json", reason: "written by the server into its data directory at run time" },
  { name: "./data/keyring.json", reason: "written by the server into its data directory at run time" },
  { name: "./agents.js", reason: "the user's own agents module, passed to `golem-stream serve --agents`" },
  { name: "./src/agents.ts", reason: "the user's own agents module, passed to `golem-stream serve --agents`" },
];

// ---------------------------------------------------------------------------
// Repository files

function listFiles() {
  const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "ignore"],
  });
  return [...new Set(out.split("\0").filter((path) => path !== ""))].filter((path) => existsSync(join(root, path)));
}

/** What the check knows of the tree: files, folders, base names, and a reader. */
function makeTree(paths, read) {
  const files = new Set(paths);
  const folders = new Set([""]);
  const names = new Set();
  for (const path of paths) {
    names.add(posix.basename(path));
    for (let dir = posix.dirname(path); dir !== "." && !folders.has(dir); dir = posix.dirname(dir)) folders.add(dir);
  }
  const packages = [...folders].filter((dir) => files.has(dir === "" ? "package.json" : `${dir}/package.json`) && dir !== "");
  return { files, folders, names, packages, read, paths };
}

// ---------------------------------------------------------------------------
// Resolving a name

/** The nearest folder above `file` with a package.json ("" outside every package). */
function packageOf(tree, file) {
  for (let dir = posix.dirname(file); dir !== "."; dir = posix.dirname(dir)) {
    if (tree.packages.includes(dir)) return dir;
  }
  return "";
}

function exists(tree, path) {
  const clean = posix.normalize(path).replace(/\/$/, "");
  if (clean.startsWith("..")) return false;
  return tree.files.has(clean) || tree.folders.has(clean === "." ? "" : clean);
}

/** Where `name`, named in `file`, may be: the candidates in order. */
function candidates(tree, file, name, { sourceComment = false } = {}) {
  const here = posix.dirname(file);
  if (name.startsWith("./") || name.startsWith("../")) return [posix.join(here, name)];
  const pkg = packageOf(tree, file);
  const list = [name, posix.join(here, name)];
  if (pkg !== "") {
    list.push(posix.join(pkg, name));
    if (sourceComment) list.push(posix.join(pkg, "src", name));
  } else if (/^(src|test|bench)\//.test(name)) {
    for (const other of tree.packages) list.push(posix.join(other, name));
  }
  return list;
}

/** True when `name` (a path with `/`, or a bare file name) names something in the tree. */
function resolves(tree, file, name, options) {
  if (!name.includes("/")) return nameExists(tree, file, name);
  if (candidates(tree, file, name, options).some((path) => exists(tree, path))) return true;
  const rooted = ROOT_FOLDERS.some((prefix) => name.startsWith(prefix)) || /^(\.\.?|src|test|bench)\//.test(name);
  if (rooted) return false;
  const tail = `/${name.replace(/\/$/, "")}`;
  return tree.paths.some((path) => path.endsWith(tail) || posix.dirname(path).endsWith(tail));
}

/** ALLOWED entries that matched something: one that never does is stale and fails the run. */
const usedAllowances = new Set();

function isAllowed(file, name) {
  const entry = ALLOWED.find((allowed) => allowed.name === name && (allowed.in === undefined || allowed.in === file));
  if (entry !== undefined) usedAllowances.add(entry);
  return entry !== undefined;
}

// ---------------------------------------------------------------------------
// Markdown

/** GitHub's heading slug: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images keep their text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/[`*]/g, "") // code and emphasis marks
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-");
}

/** The anchors a Markdown text offers: heading slugs (numbered as GitHub numbers repeats) and HTML ids. */
function anchorsOf(text) {
  const anchors = new Set();
  const seen = new Map();
  let fence = null;
  for (const line of text.split("\n")) {
    const opens = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (opens) {
      if (fence === null) fence = opens[1][0];
      else if (opens[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of line.matchAll(/<a\s[^>]*\b(?:id|name)=["']([^"']+)["']/gi)) anchors.add(match[1]);
  }
  return anchors;
}

/** `line` with its inline code spans blanked (same length), so links inside code are not links. */
function withoutCode(line) {
  return line.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (span) => " ".repeat(span.length));
}

/** Inline code spans of a line: their contents. */
function codeSpans(line) {
  return [...line.matchAll(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g)].map((match) => match[2].trim());
}

/** The part of a word that may be a path: quotes, brackets and trailing punctuation off, `:line` and `#anchor` dropped. */
function pathPart(word) {
  return word
    .replace(/^[("'[{]+/, "")
    .replace(/[)"'\]},;.:]+$/, "")
    .replace(/^[\w.-]+=/, "") // --flag=path, key=path
    .replace(/#.*$/, "")
    .replace(/:\d+(?::\d+)?$/, "");
}

/** Words with these are patterns, placeholders, URLs or package specifiers, not paths. */
function isPattern(word) {
  return /[*<>{}$?|\\]|:\/\/|^@|^~|^\/|node_modules|(^|\/)dist(\/|$)|\.\.\./.test(word);
}

function looksLikePath(word, extensions) {
  if (word === "" || isPattern(word)) return false;
  if (!/^[\w./@-]+$/.test(word)) return false;
  if (!/[a-z]/i.test(word)) return false;
  const hasExtension = extensions.some((ext) => word.endsWith(ext) && word.length > ext.length);
  if (word.includes("/")) return hasExtension || ROOT_FOLDERS.some((prefix) => word.startsWith(prefix));
  return hasExtension && !word.startsWith(".");
}

/**
 * Test files named without their extension (`loopback.e2e.test`, `session.test`): the words of
 * `line` that are one, each to be the name of a test file with a script extension. Not a regular
 * expression's `.test(` call, nor a name written with its extension (a path, checked as one).
 */
function testNames(line) {
  return [...line.matchAll(/(?<![\w.$/#@-])([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.test)(?![\w(-]|\.\w)/g)].map((match) => match[1]);
}

const TEST_EXTENSIONS = [".ts", ".mts", ".mjs", ".js", ".cjs"];

function testFileExists(tree, file, name) {
  return TEST_EXTENSIONS.some((ext) => nameExists(tree, file, `${name}${ext}`));
}

/**
 * Markdown files whose bare file names are all in one folder, as the file itself says (its own
 * sentence names the folder): a name found only elsewhere is a stale one.
 */
const NAME_SCOPES = { "docs/client-requirements.md": "packages/client/" };

/** A bare file name exists: anywhere, or in the folder NAME_SCOPES gives for `file`. */
function nameExists(tree, file, name) {
  const scope = NAME_SCOPES[file];
  if (scope === undefined) return tree.names.has(name) || tree.folders.has(name);
  return tree.paths.some((path) => path.startsWith(scope) && posix.basename(path) === name);
}

/** Dangling references in one Markdown file: `{ line, kind, text }`. */
function checkMarkdown(tree, file, text) {
  const found = [];
  const ownAnchors = anchorsOf(text);
  let fence = null;
  text.split("\n").forEach((line, index) => {
    const opens = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (opens) {
      if (fence === null) fence = opens[1][0];
      else if (opens[1][0] === fence) fence = null;
      return;
    }
    if (fence !== null) return;
    const number = index + 1;

    const prose = withoutCode(line);
    const targets = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]);
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(prose);
    if (definition) targets.push(definition[1]);
    for (const target of targets) {
      const problem = checkLink(tree, file, target, ownAnchors);
      if (problem !== null) found.push({ line: number, kind: problem.kind, text: `${target}${problem.detail}` });
    }

    for (const name of testNames(line)) {
      if (!isAllowed(file, name) && !testFileExists(tree, file, name)) found.push({ line: number, kind: "test name", text: name });
    }

    // Outside code: paths with a `/`, and bare `.ts`/`.mjs` names (a bare "Node.js" is no file name).
    for (const word of prose.replace(/\]\([^)]*\)/g, "]").split(/\s+/)) {
      const path = pathPart(word);
      if (!looksLikePath(path, path.includes("/") ? PATH_EXTENSIONS : COMMENT_EXTENSIONS) || isAllowed(file, path)) continue;
      if (!resolves(tree, file, path)) found.push({ line: number, kind: path.includes("/") ? "prose path" : "file name", text: path });
    }

    for (const span of codeSpans(line)) {
      for (const word of span.split(/\s+/)) {
        const path = pathPart(word);
        if (!looksLikePath(path, PATH_EXTENSIONS) || isAllowed(file, path)) continue;
        if (!resolves(tree, file, path)) found.push({ line: number, kind: path.includes("/") ? "code path" : "file name", text: path });
      }
    }
  });
  return found;
}

/**
 * The project's own GitHub address as a root-relative path (`/docs/x.md#a`), so links the
 * package READMEs spell out in full (npm shows a README without the repository around it) are
 * checked as well; any other URL as it is.
 */
function projectPath(target) {
  const match = /^https:\/\/github\.com\/golemcloud\/golem-stream(?:\/(?:blob|tree)\/main(\/[^#?]*)?)?\/?(#.*)?$/.exec(target);
  if (match === null) return target;
  const path = match[1] ?? "/README.md";
  return `${path}${match[2] ?? ""}`;
}

/** Null when a link target is fine, else what is wrong with it. */
function checkLink(tree, file, rawTarget, ownAnchors) {
  const target = projectPath(rawTarget);
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto:, …
  const hash = target.indexOf("#");
  const rawPath = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
  let path;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return { kind: "link", detail: " (not a valid URL path)" };
  }
  let resolved = file;
  if (path !== "") {
    resolved = path.startsWith("/") ? posix.normalize(path.slice(1)) : posix.join(posix.dirname(file), path);
    if (!exists(tree, resolved)) return { kind: "link", detail: " (no such file)" };
  }
  if (anchor === null || anchor === "" || !resolved.endsWith(".md")) return null;
  const anchors = resolved === file ? ownAnchors : anchorsOf(tree.read(resolved));
  if (!anchors.has(anchor)) return { kind: "anchor", detail: ` (no heading "${anchor}" in ${resolved})` };
  return null;
}

// ---------------------------------------------------------------------------
// Source comments

/** Every comment of a TypeScript text: `{ pos, text }`, found by TypeScript's own scanner. */
function commentsOf(text) {
  const source = ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const comments = new Map();
  const collect = (pos) => {
    for (const range of [...(ts.getLeadingCommentRanges(text, pos) ?? []), ...(ts.getTrailingCommentRanges(text, pos) ?? [])]) {
      comments.set(range.pos, text.slice(range.pos, range.end));
    }
  };
  const visit = (node) => {
    collect(node.pos);
    collect(node.end);
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...comments].map(([pos, comment]) => ({ pos, text: comment }));
}

/** Dangling file names in the comments of one source file. */
function checkSource(tree, file, text) {
  const found = [];
  for (const comment of commentsOf(text)) {
    const firstLine = text.slice(0, comment.pos).split("\n").length;
    comment.text.split("\n").forEach((line, offset) => {
      for (const name of testNames(line)) {
        if (!isAllowed(file, name) && !testFileExists(tree, file, name))
          found.push({ line: firstLine + offset, kind: "test name", text: name });
      }
      const words = withoutUrls(line).split(/[\s`]+/);
      for (const word of words) {
        const path = pathPart(word);
        if (!looksLikePath(path, COMMENT_EXTENSIONS) || isAllowed(file, path)) continue;
        if (!resolves(tree, file, path, { sourceComment: true })) {
          found.push({ line: firstLine + offset, kind: "comment", text: path });
        }
      }
    });
  }
  return found;
}

function withoutUrls(line) {
  return line.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, " ");
}

// ---------------------------------------------------------------------------
// Which files, and the run

function isCheckedMarkdown(path) {
  if (!path.endsWith(".md")) return false;
  if (path === "CHANGELOG.md" || path.endsWith("/CHANGELOG.md")) return false;
  if (path.startsWith(".changeset/")) return false;
  if (/^packages\/[^/]+\/api\/[^/]+\.api\.md$/.test(path)) return false;
  return !path.split("/").some((part) => part === "node_modules" || part === "dist");
}

function isCheckedSource(path) {
  return /^packages\/[^/]+\/src\/.+\.ts$/.test(path) && !path.split("/").includes("node_modules");
}

function checkTree(tree) {
  const found = [];
  for (const path of tree.paths) {
    if (isCheckedMarkdown(path)) found.push(...checkMarkdown(tree, path, tree.read(path)).map((hit) => ({ file: path, ...hit })));
    else if (isCheckedSource(path)) found.push(...checkSource(tree, path, tree.read(path)).map((hit) => ({ file: path, ...hit })));
  }
  return found;
}

/** A small tree in memory, and what the check must (and must not) report in it. */
const SAMPLES = {
  files: {
    "README.md": [
      "See [docs](docs/guide.md#running-it) and [gone](docs/old.md).",
      "[a](https://github.com/golemcloud/golem-stream/blob/main/docs/guide.md#guide) [b](https://github.com/golemcloud/golem-stream/tree/main/packages/server#readme)",
      "[c](https://github.com/golemcloud/golem-stream/blob/main/docs/moved.md) [d](https://github.com/golemcloud/golem-stream#nothing) [e](https://github.com/golemcloud/golem-stream/issues)",
    ].join("\n"),
    "docs/guide.md": [
      "# Guide",
      "## Running it",
      "Read [the server](../packages/server/README.md#options) and [here](#running-it) and [nowhere](#missing).",
      "The rules are in `packages/server/src/admission/rules.ts` and `packages/server/src/sessions/session-runtime.ts`.",
      "Any package's `src/admission/rules.ts`; the `sessions/gone.ts` part; `live-session.ts` and `rules.ts`.",
      "Not paths: `*.test.ts`, `<pkg>/src/x.ts`, `@golem-stream/wire/internal`, `dist/index.js`, `https://x.dev/a.md`.",
      "```sh",
      "node scripts/missing.mjs `packages/nothing.ts`",
      "```",
      "Run `node scripts/check.mjs --flag` then `node scripts/absent.mjs`.",
      "In prose: docs/gone.md, docs/guide.md, Node.js, rules.ts and gone.ts (see [x](guide.md)).",
      "Tested in loopback.test and `cuts.e2e.test`, not by RegExp.test or `/x/.test(s)`; see `cuts.e2e.test.ts`, `cuts.test-d.ts`.",
    ].join("\n"),
    "packages/server/package.json": "{}",
    "packages/server/README.md": "## Options\nSee `src/admission/rules.ts` and `src/nothing.ts` and [src](src/admission/).\n",
    "packages/server/src/admission/rules.ts": [
      "// Moved here from session-runtime.ts; see ./rules.ts and admission/rules.ts.",
      'const s = "// not a comment: gone.ts"; const r = /\\/\\/ also.ts/;',
      "/* The cache (cache.ts), tested by cache.test; SAFE.test(name) and unreachable.test(x) are calls */",
      "export const x = 1; // trailing: rules.ts",
    ].join("\n"),
    "docs/client-requirements.md": "Names in packages/client: `agent.ts`, `rules.ts`, output.property.test, cuts.e2e.test.\n",
    "packages/client/src/agent.ts": "",
    "packages/client/test/output.property.test.ts": "",
    "scripts/check.mjs": "",
    "packages/server/test/cuts.e2e.test.ts": "",
    "packages/server/test/cuts.test-d.ts": "",
  },
  /** `file:line kind text` of every expected report, in order. */
  expected: [
    "README.md:1 link docs/old.md (no such file)",
    "README.md:3 link https://github.com/golemcloud/golem-stream/blob/main/docs/moved.md (no such file)",
    'README.md:3 anchor https://github.com/golemcloud/golem-stream#nothing (no heading "nothing" in README.md)',
    'docs/guide.md:3 anchor #missing (no heading "missing" in docs/guide.md)',
    "docs/guide.md:4 code path packages/server/src/sessions/session-runtime.ts",
    "docs/guide.md:5 code path sessions/gone.ts",
    "docs/guide.md:5 file name live-session.ts",
    "docs/guide.md:10 code path scripts/absent.mjs",
    "docs/client-requirements.md:1 file name rules.ts",
    "docs/client-requirements.md:1 test name cuts.e2e.test",
    "docs/guide.md:11 prose path docs/gone.md",
    "docs/guide.md:11 file name gone.ts",
    "docs/guide.md:12 test name loopback.test",
    "packages/server/README.md:2 code path src/nothing.ts",
    "packages/server/src/admission/rules.ts:1 comment session-runtime.ts",
    "packages/server/src/admission/rules.ts:3 comment cache.ts",
    "packages/server/src/admission/rules.ts:3 test name cache.test",
  ],
};

function checkSamples() {
  const paths = Object.keys(SAMPLES.files);
  const tree = makeTree(paths, (path) => SAMPLES.files[path]);
  const got = checkTree(tree).map((hit) => `${hit.file}:${hit.line} ${hit.kind} ${hit.text}`);
  const wrong = [];
  for (const line of SAMPLES.expected) if (!got.includes(line)) wrong.push(`not caught: ${line}`);
  for (const line of got) if (!SAMPLES.expected.includes(line)) wrong.push(`caught by mistake: ${line}`);
  return wrong;
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
);
const checked = tree.paths.filter((path) => isCheckedMarkdown(path) || isCheckedSource(path)).length;
if (checked === 0) {
  console.error("check-doc-references: no files found to read");
  process.exit(1);
}
usedAllowances.clear(); // the samples' matches do not count
const found = checkTree(tree);
for (const entry of ALLOWED) {
  if (!usedAllowances.has(entry))
    found.push({ file: "scripts/check-doc-references.mjs", line: 0, kind: "stale allowance", text: entry.name });
}
if (found.length > 0) {
  console.error(`check-doc-references: ${found.length} reference(s) to files, folders or headings that do not exist:`);
  for (const hit of found) console.error(`  ${hit.file}:${hit.line}: ${hit.kind}: ${hit.text}`);
  process.exit(1);
}
console.log(`check-doc-references: ${checked} files, every link, path and file name resolves`);
