/**
 * The source side of check-doc-references: the comments of a TypeScript file (found with
 * TypeScript's own parser, so strings and regular expressions are not mistaken for comments)
 * and the `.ts`/`.mjs` file names and test names they hold.
 */
import ts from "typescript";
import { unknownEntries } from "./package-entries.mjs";
import { COMMENT_EXTENSIONS, isAllowed, looksLikePath, pathPart, resolves, testFileExists, testNames } from "./resolve.mjs";

/** Every comment of a TypeScript text: `{ pos, text }`, found by TypeScript's own parser. */
export function commentsOf(text) {
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
export function checkSource(tree, file, text) {
  const found = [];
  for (const comment of commentsOf(text)) {
    const firstLine = text.slice(0, comment.pos).split("\n").length;
    comment.text.split("\n").forEach((line, offset) => {
      for (const { kind, text: name } of unknownEntries(tree, line)) {
        if (!isAllowed(tree, file, name)) found.push({ line: firstLine + offset, kind, text: name });
      }
      for (const name of testNames(line)) {
        if (!isAllowed(tree, file, name) && !testFileExists(tree, file, name))
          found.push({ line: firstLine + offset, kind: "test name", text: name });
      }
      const words = withoutUrls(line).split(/[\s`]+/);
      for (const word of words) {
        const path = pathPart(word);
        if (!looksLikePath(path, COMMENT_EXTENSIONS) || isAllowed(tree, file, path)) continue;
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
