/**
 * The workspace's own package names with their entry points: `@golem-stream/wire/internal` in a
 * doc or a comment must be a package of the workspace and a subpath its package.json exports
 * (a `*` in an export key matches any rest), so an entry point that was renamed or dropped takes
 * its mentions along.
 */
import { posix } from "node:path";

/** The scope whose names are the workspace's own. */
const SCOPE = "@golem-stream/";

/** Package name -> its export keys (null: no `exports`, every subpath resolves), read once per tree. */
function entriesOf(tree) {
  if (tree.entries !== undefined) return tree.entries;
  const entries = new Map();
  for (const path of tree.paths) {
    if (posix.basename(path) !== "package.json" || path.split("/").includes("node_modules")) continue;
    let manifest;
    try {
      manifest = JSON.parse(tree.read(path));
    } catch {
      continue; // not ours to judge here: a broken package.json fails the install
    }
    if (typeof manifest.name !== "string" || !manifest.name.startsWith(SCOPE)) continue;
    const exports = manifest.exports;
    if (exports === undefined) entries.set(manifest.name, null);
    else if (typeof exports === "string" || !Object.keys(exports).some((key) => key.startsWith("."))) entries.set(manifest.name, ["."]);
    else entries.set(manifest.name, Object.keys(exports));
  }
  tree.entries = entries;
  return entries;
}

function exported(keys, subpath) {
  return keys.some((key) => {
    const star = key.indexOf("*");
    if (star === -1) return key === subpath;
    return subpath.startsWith(key.slice(0, star)) && subpath.endsWith(key.slice(star + 1)) && subpath.length >= key.length - 1;
  });
}

/** The workspace package specifiers in `line` that name no package or no entry point of one. */
export function unknownEntries(tree, line) {
  const entries = entriesOf(tree);
  const unknown = [];
  for (const match of line.matchAll(/(?<![\w.-])@golem-stream\/([a-z0-9][a-z0-9._-]*)((?:\/[\w.-]+)*)(?![\w*<-])/g)) {
    const name = `${SCOPE}${match[1]}`.replace(/\.+$/, "");
    const subpath = `.${match[2]}`.replace(/\.+$/, "") || ".";
    if (!entries.has(name)) {
      if (match[2] === "") unknown.push({ kind: "package", text: name });
      else unknown.push({ kind: "package", text: `${name}${match[2]}` });
      continue;
    }
    const keys = entries.get(name);
    if (keys !== null && subpath !== "." && !exported(keys, subpath)) unknown.push({ kind: "package entry", text: `${name}${match[2]}` });
  }
  return unknown;
}
