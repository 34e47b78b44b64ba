/**
 * Where an agents module's top level threw, for `serve --agents`' one-line
 * message: a `TypeError: Cannot read properties of undefined` says nothing
 * of which line of the user's code read it, and the message never shows a
 * stack trace. The place is the first frame of the error's stack in a file
 * of the user's: a file: URL, not Node's internals, not a dependency in
 * node_modules, and not one of the golem-stream libraries the module calls
 * (`implement` refusing a method throws inside `@golem-stream/server`; the
 * mistake is at the user's call of it).
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The libraries an agents module calls. Installed, they are under node_modules; linked (a
 * workspace, `npm link`), Node's stack names their real paths outside it, so they are known
 * by their package's name instead.
 */
const LIBRARIES = new Set([
  "@golem-stream/server",
  "@golem-stream/contract",
  "@golem-stream/schema-value",
  "@golem-stream/wire",
  "@golem-stream/tokens",
  "@golem-stream/client",
  "@golem-stream/store-postgres",
]);

/**
 * A V8 stack frame in a file, `at name (file:///…:12:5)` or `at file:///…:12:5`, or a path in
 * place of the URL where `--enable-source-maps` mapped it to its source (`at <anonymous>
 * (/app/src/agents.ts:4:21)`); its URL or path, line and column.
 */
const FRAME = /^\s+at (?:.*?\()?(file:\/\/[^\s)]+?|\/[^()]+?|[A-Za-z]:\\[^()]+?):(\d+):(\d+)\)?$/gm;

/**
 * `file:line:column` of the first frame of `error`'s stack in the user's code, the file relative
 * to `cwd` when it is below it (as the user gave `--agents`), else absolute; undefined when the
 * thrown value has no stack or none of its frames is the user's. Never throws.
 */
export function throwLocation(error: unknown, cwd: string): string | undefined {
  try {
    if (!(error instanceof Error)) return undefined;
    for (const [, where = "", line = "", column = ""] of String(error.stack).matchAll(FRAME)) {
      const path = where.startsWith("file:") ? fileURLToPath(where) : where;
      if (path.split(sep).includes("node_modules") || isLibrary(path)) continue;
      return `${shown(path, cwd)}:${line}:${column}`;
    }
  } catch {
    // A stack whose getter throws, or a URL that is no path: no location, the message stays.
  }
  return undefined;
}

function shown(path: string, cwd: string): string {
  const below = relative(cwd, path);
  return below === "" || below === ".." || below.startsWith(`..${sep}`) || isAbsolute(below) ? path : below;
}

/**
 * Whether `path` belongs to one of LIBRARIES: the nearest package.json above it with a name names
 * it (one without, such as `{"type": "module"}` in a dist/ folder, only sets its folder's module
 * format).
 */
function isLibrary(path: string): boolean {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const name = packageName(join(dir, "package.json"));
    if (name !== undefined) return LIBRARIES.has(name);
    if (dirname(dir) === dir) return false;
  }
}

/** The `name` of the package.json at `file`; undefined when there is none, it is unreadable or it has no name. */
function packageName(file: string): string | undefined {
  try {
    const name = (JSON.parse(readFileSync(file, "utf8")) as { name?: unknown } | null)?.name;
    return typeof name === "string" ? name : undefined;
  } catch {
    return undefined;
  }
}
