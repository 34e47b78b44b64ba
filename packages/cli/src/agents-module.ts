/**
 * `serve --agents <file>`: imports the user's ES module and takes its default
 * export as the catalogue to serve (a `defineCatalogue(...)` or an
 * `AgentHost`; of CommonJS in tsc's shape, its `exports.default`). Everything that can go wrong with it is the user's to fix,
 * so each becomes one line naming the file and the problem, with exit code
 * 78 (`EXIT.agentsInvalid`), never a stack trace: no such file, a syntax
 * error (with its line, also one a TypeScript loader found), an import that
 * cannot be resolved, CommonJS in a file Node loads as an ES module (with
 * Node's explanation of why), an error thrown while the module loads (with
 * where in the user's code), no default
 * export, or a catalogue that fails the server's checks.
 */
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { extname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { AgentHost, Catalogue } from "@golem-stream/server";
import { CliError, EXIT } from "./exit-codes.js";
import { throwLocation } from "./throw-location.js";

/** What the message quotes of an error's text: its first line, this long at most (Node's whole explanation of CommonJS in an ES module, three times this). */
const MAX_PROBLEM_LENGTH = 300;
/**
 * The longest catalogue error quoted whole: the server's own message, which names the place
 * (application, environment, agent type and method, up to 128 bytes each) before its advice,
 * so at MAX_PROBLEM_LENGTH its advice was cut short.
 */
const MAX_CATALOGUE_PROBLEM_LENGTH = 3 * MAX_PROBLEM_LENGTH;
/** How long `node --check` may take to find a syntax error's line; past it, the message goes without one. */
const SYNTAX_CHECK_TIMEOUT_MS = 10_000;
const TYPESCRIPT = new Set([".ts", ".mts", ".cts", ".tsx"]);

/** The server's check of a default export (`checkAgents` of `@golem-stream/server`). */
export type CheckAgents = (value: unknown) => Catalogue | AgentHost;

/**
 * Loads `file` (relative to `cwd`) and returns its checked default export;
 * `signal` (SIGINT/SIGTERM) stops the wait for a module still loading.
 */
export async function loadAgentsModule(
  file: string,
  cwd: string,
  checkAgents: CheckAgents,
  signal: AbortSignal,
): Promise<Catalogue | AgentHost> {
  const path = resolve(cwd, file);
  const refuse = (problem: string): CliError => new CliError(EXIT.agentsInvalid, `--agents ${file}: ${problem}`);
  const found = await stat(path).catch(() => undefined);
  if (found === undefined) throw refuse(`no such file (looked for ${path})`);
  if (!found.isFile()) throw refuse("not a file: give the module's file (e.g. ./agents.js)");
  const loading = await importWhileAlive(pathToFileURL(path).href, signal);
  if (loading.outcome === "stuck") throw refuse(STUCK);
  if (loading.outcome === "interrupted") {
    throw new CliError(EXIT.interrupted, `--agents ${file}: interrupted while it was loading; nothing was started`);
  }
  if (loading.outcome === "threw") throw refuse(await loadProblem(loading.error, path, cwd));
  const exported = defaultExport(loading.module);
  if (exported === undefined) {
    throw refuse("no default export: end it with export default defineCatalogue({ applications: { ... } }) (or an AgentHost)");
  }
  try {
    return checkAgents(exported);
  } catch (error) {
    throw refuse(`invalid catalogue: ${firstLine(error, MAX_CATALOGUE_PROBLEM_LENGTH)}`);
  }
}

/**
 * The module's default export. Node gives a CommonJS module's `module.exports` as its default;
 * in the shape tsc and Babel emit for an ES module (`Object.defineProperty(exports, "__esModule",
 * { value: true }); exports.default = ...`) that is an object marked `__esModule` whose `default`
 * member is the module's own default export, so that member is taken, as TypeScript's and the
 * bundlers' interop take it (undefined when the transpiled module had no default export).
 */
function defaultExport(module: Record<string, unknown>): unknown {
  const exported = module["default"];
  try {
    if (typeof exported === "object" && exported !== null && (exported as { __esModule?: unknown }).__esModule === true) {
      return (exported as { default?: unknown }).default;
    }
  } catch {
    // A getter or a Proxy that throws: not tsc's shape; the catalogue's check says what it is.
  }
  return exported;
}

const STUCK = "its top-level await (or that of a module it imports) never settled: nothing left running could settle what it awaits";

type Loading =
  | { readonly outcome: "loaded"; readonly module: Record<string, unknown> }
  | { readonly outcome: "threw"; readonly error: unknown }
  | { readonly outcome: "stuck" }
  | { readonly outcome: "interrupted" };

/**
 * Imports the module, unless it can never finish or the user stops first.
 * A top-level await of a promise nothing will settle leaves the event loop
 * empty, and Node would end the process with exit code 13 and no word;
 * `beforeExit` comes first, while the import is pending, so the wait is
 * known to be endless. One that keeps the process alive (a connection that
 * never answers) waits until a signal: nothing has been started to stop.
 */
function importWhileAlive(url: string, signal: AbortSignal): Promise<Loading> {
  if (signal.aborted) return Promise.resolve({ outcome: "interrupted" });
  return new Promise((settle) => {
    const finish = (loading: Loading): void => {
      process.off("beforeExit", onDrained);
      signal.removeEventListener("abort", onAbort);
      settle(loading);
    };
    const onDrained = (): void => finish({ outcome: "stuck" });
    const onAbort = (): void => finish({ outcome: "interrupted" });
    process.on("beforeExit", onDrained);
    signal.addEventListener("abort", onAbort);
    import(url).then(
      (module: Record<string, unknown>) => finish({ outcome: "loaded", module }),
      (error: unknown) => finish({ outcome: "threw", error }),
    );
  });
}

/**
 * Why importing the module failed, in a few words, whatever was thrown (even a value whose
 * getters throw); an error its code threw says where (relative to `cwd`).
 */
async function loadProblem(error: unknown, path: string, cwd: string): Promise<string> {
  try {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === "ERR_UNKNOWN_FILE_EXTENSION" && TYPESCRIPT.has(extname(path))) {
      return "a TypeScript file: compile it with tsc and give the .js file, or load TypeScript with NODE_OPTIONS=--import=tsx (docs/agents.md)";
    }
    if (code === "ERR_MODULE_NOT_FOUND") return `an import cannot be found: ${firstLine(error)}`;
    // A SyntaxError the module's code threw (JSON.parse of a bad file) has its frame in that code;
    // only one thrown while compiling a module is a syntax error in it.
    if (error instanceof SyntaxError && throwLocation(error, cwd) === undefined) {
      const line = await syntaxErrorLine(path);
      return line === undefined
        ? `syntax error in it or a module it imports: ${firstLine(error)}`
        : `syntax error at line ${line}: ${firstLine(error)}`;
    }
    const located = error instanceof Error ? loaderSyntaxError(error.message, path) : undefined;
    if (located !== undefined) return located;
    const commonJs = error instanceof Error ? commonJsProblem(error, path) : undefined;
    if (commonJs !== undefined) return commonJs;
    if (isNamed(error, "CatalogueError")) return `invalid catalogue: ${firstLine(error, MAX_CATALOGUE_PROBLEM_LENGTH)}`;
  } catch {
    // Telling what it is threw (a Proxy, a getter): it is only something thrown.
  }
  const at = throwLocation(error, cwd);
  return `it threw while loading: ${firstLine(error)}${at === undefined ? "" : ` (at ${at})`}`;
}

/**
 * The line of the syntax error in `path`, from `node --check` (an import's
 * SyntaxError carries no location); undefined when the error is in another
 * module it imports, or the check could not run.
 */
function syntaxErrorLine(path: string): Promise<number | undefined> {
  return new Promise((resolveLine) => {
    execFile(process.execPath, ["--check", path], { timeout: SYNTAX_CHECK_TIMEOUT_MS, env: {} }, (error, _stdout, stderr) => {
      if (error === null) return resolveLine(undefined);
      const match = /^(.*):(\d+)$/m.exec(String(stderr));
      resolveLine(match !== null && match[1] === path ? Number(match[2]) : undefined);
    });
  });
}

/**
 * A syntax error as an esbuild-based TypeScript loader (tsx) reports it: a
 * first line "Transform failed with 1 error:", then one line per error,
 * `<file>:<line>:<column>: ERROR: <text>`. The first of them, as Node's own
 * syntax errors are reported; undefined for any other message.
 */
function loaderSyntaxError(message: string, path: string): string | undefined {
  if (!/^Transform failed with \d+ errors?:\n/.test(message)) return undefined;
  const match = /^(.+):(\d+):\d+: ERROR: (.+)$/m.exec(message);
  if (match === null) return undefined;
  const [, file = "", line = "", text = ""] = match;
  // tsx names a .mts or .cts module by its .ts name.
  const same = file === path || (/\.[mc]ts$/.test(path) && file === `${path.slice(0, -4)}.ts`);
  return `syntax error ${same ? "" : `in ${file} `}at line ${line}: ${clip(text)}`;
}

/** Node's ReferenceError for a CommonJS name used in an ES module: `require is not defined in ES module scope, …`. */
const COMMONJS_IN_ESM = /^(require|module|exports|__filename|__dirname) is not defined in ES module scope/;

/**
 * CommonJS (`require`, `module.exports`, `exports.default`) in a file Node loads as an ES module:
 * Node's whole explanation on one line (its second line says why the file is an ES module, a
 * `.js` file under `"type": "module"`, and how to make it CommonJS), naming the module when it
 * is another one it imports, and how to write it as an ES module instead; undefined for any other
 * error.
 */
function commonJsProblem(error: Error, path: string): string | undefined {
  const message = String(error.message);
  if (String(error.name) !== "ReferenceError" || !COMMONJS_IN_ESM.test(message)) return undefined;
  const explanation = message
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => (/[.!?]$/.test(line) ? line : `${line}.`))
    .join(" ");
  const file = errorFile(error);
  const where = file === undefined || file === path ? "" : ` (${file})`;
  return clip(
    `CommonJS in an ES module${where}: ${explanation} To keep it an ES module, use import and export default instead (from TypeScript: compile with "module": "nodenext")`,
    3 * MAX_PROBLEM_LENGTH,
  );
}

/** The file an error was thrown in: the first frame of its stack, when that is a file: URL. */
function errorFile(error: Error): string | undefined {
  const match = /^\s+at (?:.*\()?(file:\/\/[^\s)]+?):\d+:\d+\)?$/m.exec(String(error.stack));
  if (match?.[1] === undefined) return undefined;
  try {
    return fileURLToPath(match[1]);
  } catch {
    return undefined;
  }
}

function isNamed(error: unknown, name: string): boolean {
  return error instanceof Error && error.name === name;
}

/** What is shown of a thrown value that has neither a string form nor JSON. */
const NO_TEXT = "a value with no text form";

/**
 * An error as one short line: `Name: message` (the name left out for a plain
 * Error or a CatalogueError already said). Never throws: a module may throw
 * anything, even a value `String()` refuses (an object without a prototype,
 * shown as its JSON instead).
 */
function firstLine(error: unknown, max = MAX_PROBLEM_LENGTH): string {
  let text: string;
  try {
    if (error instanceof Error) {
      const message = String(error.message).split("\n")[0] ?? "";
      const name = String(error.name);
      text =
        name === "Error" || name === "CatalogueError" || name === "SyntaxError" || message === "" ? message || name : `${name}: ${message}`;
    } else {
      text = textOf(error).split("\n")[0] ?? "";
    }
  } catch {
    text = NO_TEXT;
  }
  return clip(text, max);
}

/** A thrown value that is no Error as text: its string form, or else its JSON (which may throw: a cycle). */
function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return JSON.stringify(value) ?? NO_TEXT;
  }
}

function clip(text: string, max = MAX_PROBLEM_LENGTH): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
