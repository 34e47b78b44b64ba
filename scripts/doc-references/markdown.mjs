/**
 * The Markdown side of check-doc-references: links and their anchors (GitHub's heading slugs),
 * paths and file names in inline code and in prose, test files named without their extension.
 * Fenced code blocks are skipped: they show commands and code, often a user's own files.
 */
import { posix } from "node:path";
import { unknownEntries } from "./package-entries.mjs";
import {
  COMMENT_EXTENSIONS,
  PATH_EXTENSIONS,
  exists,
  isAllowed,
  looksLikePath,
  pathPart,
  resolves,
  testFileExists,
  testNames,
} from "./resolve.mjs";

/** GitHub's heading slug: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images keep their text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/[`*]/g, "") // code and emphasis marks
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-");
}

/** The anchors a Markdown text offers: heading slugs (numbered as GitHub numbers repeats) and HTML ids. */
export function anchorsOf(text) {
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

/** Dangling references in one Markdown file: `{ line, kind, text }`. */
export function checkMarkdown(tree, file, text) {
  const found = [];
  const ownAnchors = anchorsOf(text);
  let fence = null;
  text.split("\n").forEach((line, index) => {
    // Package specifiers everywhere, code blocks too: an import of a workspace package is never a user's own name.
    for (const { kind, text: name } of unknownEntries(tree, line)) {
      if (!isAllowed(tree, file, name)) found.push({ line: index + 1, kind, text: name });
    }
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
      if (!isAllowed(tree, file, name) && !testFileExists(tree, file, name)) found.push({ line: number, kind: "test name", text: name });
    }

    // Outside code: paths with a `/`, and bare `.ts`/`.mjs` names (a bare "Node.js" is no file name).
    for (const word of prose.replace(/\]\([^)]*\)/g, "]").split(/\s+/)) {
      const path = pathPart(word);
      if (!looksLikePath(path, path.includes("/") ? PATH_EXTENSIONS : COMMENT_EXTENSIONS) || isAllowed(tree, file, path)) continue;
      if (!resolves(tree, file, path)) found.push({ line: number, kind: path.includes("/") ? "prose path" : "file name", text: path });
    }

    for (const span of codeSpans(line)) {
      for (const word of span.split(/\s+/)) {
        const path = pathPart(word);
        if (!looksLikePath(path, PATH_EXTENSIONS) || isAllowed(tree, file, path)) continue;
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

/** The anchors of a Markdown file of the tree, read once per tree. */
function anchorsIn(tree, path) {
  tree.anchors ??= new Map();
  if (!tree.anchors.has(path)) tree.anchors.set(path, anchorsOf(tree.read(path)));
  return tree.anchors.get(path);
}

/** Null when a link target is fine, else what is wrong with it. */
function checkLink(tree, file, rawTarget, ownAnchors) {
  const target = projectPath(rawTarget);
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto:, …
  const hash = target.indexOf("#");
  const rawPath = hash === -1 ? target : target.slice(0, hash);
  let path;
  let anchor;
  try {
    path = decodeURIComponent(rawPath);
    anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
  } catch {
    return { kind: "link", detail: " (not a valid URL path)" };
  }
  let resolved = file;
  if (path !== "") {
    resolved = path.startsWith("/") ? posix.normalize(path.slice(1)) : posix.join(posix.dirname(file), path);
    if (!exists(tree, resolved)) return { kind: "link", detail: " (no such file)" };
  }
  if (anchor === null || anchor === "" || !resolved.endsWith(".md")) return null;
  const anchors = resolved === file ? ownAnchors : anchorsIn(tree, resolved);
  if (!anchors.has(anchor)) return { kind: "anchor", detail: ` (no heading "${anchor}" in ${resolved})` };
  return null;
}
