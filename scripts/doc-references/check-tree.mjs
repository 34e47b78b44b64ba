/** Which files check-doc-references reads, and the check of a whole tree. */
import { checkSource } from "./comments.mjs";
import { checkMarkdown } from "./markdown.mjs";

export function isCheckedMarkdown(path) {
  if (!path.endsWith(".md")) return false;
  if (path === "CHANGELOG.md" || path.endsWith("/CHANGELOG.md")) return false;
  if (path.startsWith(".changeset/")) return false;
  if (/^packages\/[^/]+\/api\/[^/]+\.api\.md$/.test(path)) return false;
  return !path.split("/").some((part) => part === "node_modules" || part === "dist");
}

export function isCheckedSource(path) {
  return /^packages\/[^/]+\/src\/.+\.ts$/.test(path) && !path.split("/").includes("node_modules");
}

export function checkTree(tree) {
  const found = [];
  for (const path of tree.paths) {
    if (isCheckedMarkdown(path)) found.push(...checkMarkdown(tree, path, tree.read(path)).map((hit) => ({ file: path, ...hit })));
    else if (isCheckedSource(path)) found.push(...checkSource(tree, path, tree.read(path)).map((hit) => ({ file: path, ...hit })));
  }
  return found;
}
