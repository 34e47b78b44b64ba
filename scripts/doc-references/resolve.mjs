/**
 * What check-doc-references knows of the repository (its files, folders, base names and
 * packages) and how a name found in a file is resolved against it: relative to the repository
 * root, the file's folder or its package, by its tail, or, for a bare file name, by its name.
 */
import { posix } from "node:path";

/** A word with a `/` and one of these endings is a file path. */
export const PATH_EXTENSIONS = [".ts", ".mts", ".cts", ".mjs", ".js", ".cjs", ".md", ".json", ".sh"];
/** A word starting with one of these is a repository path, whatever it ends with. */
export const ROOT_FOLDERS = ["packages/", "docs/", "scripts/", "fixtures/", ".ci/", "examples/", "release/"];
/** In source comments only these endings are file names (`.js` there is mostly an import specifier). */
export const COMMENT_EXTENSIONS = [".ts", ".mjs"];

/**
 * What the check knows of the tree: files, folders, base names, packages, and a reader; `allowed`
 * (names that are deliberately not files here) and `scopes` (Markdown files whose bare names are
 * all in one folder) are the run's rules, `used` collects the allowances that matched.
 */
export function makeTree(paths, read, { allowed = [], scopes = {} } = {}) {
  const files = new Set(paths);
  const folders = new Set([""]);
  const names = new Set();
  for (const path of paths) {
    names.add(posix.basename(path));
    for (let dir = posix.dirname(path); dir !== "." && !folders.has(dir); dir = posix.dirname(dir)) folders.add(dir);
  }
  const packages = [...folders].filter((dir) => files.has(dir === "" ? "package.json" : `${dir}/package.json`) && dir !== "");
  return { files, folders, names, packages, read, paths, allowed, scopes, used: new Set() };
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

export function exists(tree, path) {
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
export function resolves(tree, file, name, options) {
  if (!name.includes("/")) return nameExists(tree, file, name);
  if (candidates(tree, file, name, options).some((path) => exists(tree, path))) return true;
  const rooted = ROOT_FOLDERS.some((prefix) => name.startsWith(prefix)) || /^(\.\.?|src|test|bench)\//.test(name);
  if (rooted) return false;
  const tail = `/${name.replace(/\/$/, "")}`;
  return tree.paths.some((path) => path.endsWith(tail) || posix.dirname(path).endsWith(tail));
}

/** Whether `name`, found in `file`, is on the tree's allow-list (and marks the entry used). */
export function isAllowed(tree, file, name) {
  const entry = tree.allowed.find((allowed) => allowed.name === name && (allowed.in === undefined || allowed.in === file));
  if (entry !== undefined) tree.used.add(entry);
  return entry !== undefined;
}

/** A bare file name exists: anywhere, or in the folder the tree's scopes give for `file`. */
export function nameExists(tree, file, name) {
  const scope = tree.scopes[file];
  if (scope === undefined) return tree.names.has(name) || tree.folders.has(name);
  return tree.paths.some((path) => path.startsWith(scope) && posix.basename(path) === name);
}

/** The part of a word that may be a path: quotes, brackets and trailing punctuation off, `:line` and `#anchor` dropped. */
export function pathPart(word) {
  return word
    .replace(/^[("'[{]+/, "")
    .replace(/[)"'\]},;.:]+$/, "")
    .replace(/['’]s$/, "") // a possessive: session.ts's
    .replace(/^[\w.-]+=/, "") // --flag=path, key=path
    .replace(/#.*$/, "")
    .replace(/:\d+(?::\d+)?$/, "");
}

/** Words with these are patterns, placeholders, URLs or package specifiers, not paths. */
export function isPattern(word) {
  return /[*<>{}$?|\\]|:\/\/|^@|^~|^\/|node_modules|(^|\/)dist(\/|$)|\.\.\./.test(word);
}

export function looksLikePath(word, extensions) {
  if (word === "" || isPattern(word)) return false;
  if (!/^[\w./@-]+$/.test(word)) return false;
  if (!/[a-z]/i.test(word)) return false;
  const hasExtension = extensions.some((ext) => word.endsWith(ext) && word.length > ext.length);
  if (word.includes("/")) return hasExtension || ROOT_FOLDERS.some((prefix) => word.startsWith(prefix)) || /^(src|test|bench)\//.test(word);
  return hasExtension && !word.startsWith(".");
}

/**
 * Test files named without their extension (`loopback.e2e.test`, `session.test`): the words of
 * `line` that are one, each to be the name of a test file with a script extension. Not a regular
 * expression's `.test(` call, nor a name written with its extension (a path, checked as one).
 */
export function testNames(line) {
  return [...line.matchAll(/(?<![\w.$/#@-])([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.test)(?![\w(-]|\.\w)/g)].map((match) => match[1]);
}

const TEST_EXTENSIONS = [".ts", ".mts", ".mjs", ".js", ".cjs"];

export function testFileExists(tree, file, name) {
  return TEST_EXTENSIONS.some((ext) => nameExists(tree, file, `${name}${ext}`));
}
