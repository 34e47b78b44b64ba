/**
 * `golem-stream serve --agents` refuses every module it cannot serve, as a
 * real process: one line on stderr naming the file and the problem, exit
 * code 78, no stack trace, nothing on stdout, and no data directory created.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, TOKEN } from "./support/processes.js";

const FIXTURES = fileURLToPath(new URL("./fixtures/agents/", import.meta.url));
const EMPTY_RECORD = '{ root: { kind: "record", value: { fields: [] } } }';

/** A module of this source in a fresh folder (an ES module by its .mjs name, importing nothing). */
function moduleFile(name: string, source: string): string {
  const dir = scratchDir();
  writeFileSync(join(dir, name), source);
  return join(dir, name);
}

/** Files of these sources in a fresh folder whose package.json says `"type": "module"`; the path of the first one. */
function esmPackageFile(files: Record<string, string>): string {
  const dir = scratchDir();
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), source);
  return join(dir, Object.keys(files)[0] ?? "");
}

/** The problem Node's loading of CommonJS as an ES module gives, with its whole explanation (`.js` under `"type": "module"`). */
const commonJsInEsm = (file: string, name: string, scope: string, module = file): RegExp =>
  new RegExp(
    `: CommonJS in an ES module${module === file ? "" : ` \\(${module}\\)`}: ${name} is not defined in ES module scope${scope}\\. ` +
      `This file is being treated as an ES module because it has a '\\.js' file extension and '${file.replace(/agents\\\.js$/, "")}package\\.json' ` +
      `contains "type": "module"\\. To treat it as a CommonJS script, rename it to use the '\\.cjs' file extension\\. ` +
      'To keep it an ES module, use import and export default instead \\(from TypeScript: compile with "module": "nodenext"\\)$',
  );

const untypedType = (name: string) =>
  `{ name: ${JSON.stringify(name)}, constructorParameters: ${EMPTY_RECORD}, config: [], methods: [{ name: "run", parameters: ${EMPTY_RECORD} }], implementations: { run: async () => undefined } }`;

const CASES: [string, () => string, (file: string) => RegExp, string[]?][] = [
  [
    "a missing file",
    () => join(scratchDir(), "nowhere.js"),
    (file) => new RegExp(`^--agents ${file}: no such file \\(looked for ${file}\\)$`),
  ],
  ["a folder", () => scratchDir(), (file) => new RegExp(`^--agents ${file}: not a file`)],
  [
    "a syntax error",
    () => moduleFile("agents.mjs", "export default {\n  applications: {\n    text: }\n};\n"),
    () => /: syntax error at line 3: Unexpected token '}'$/,
  ],
  [
    "a TypeScript file",
    () => moduleFile("agents.ts", "export default {};\n"),
    () => /: a TypeScript file: compile it with tsc .* NODE_OPTIONS=--import=tsx/,
  ],
  [
    "an import that cannot be found",
    () => moduleFile("agents.mjs", 'import "@golem-stream/not-a-package";\nexport default {};\n'),
    () => /: an import cannot be found: Cannot find package '@golem-stream\/not-a-package'/,
  ],
  [
    "CommonJS require() in a .js file of a package of ES modules (Node's explanation kept)",
    () => esmPackageFile({ "agents.js": 'const { join } = require("node:path");\nmodule.exports = {};\n' }),
    (file) => commonJsInEsm(file, "require", ", you can use import instead"),
  ],
  [
    "CommonJS exports.default in a .js file of a package of ES modules",
    () => esmPackageFile({ "agents.js": "exports.default = {};\n" }),
    (file) => commonJsInEsm(file, "exports", ""),
  ],
  [
    "CommonJS in a module it imports, named",
    () => esmPackageFile({ "agents.js": 'import "./settings.js";\nexport default {};\n', "settings.js": "module.exports = {};\n" }),
    (file) => commonJsInEsm(file, "module", "", file.replace(/agents\\\.js$/, "settings\\.js")),
  ],
  [
    "an error thrown while loading",
    () => moduleFile("agents.mjs", 'throw new Error("database unreachable\\nmore");\n'),
    (file) => new RegExp(`: it threw while loading: database unreachable \\(at ${file}:1:7\\)$`),
  ],
  [
    "a SyntaxError its code throws (JSON.parse of a bad file): thrown, not a syntax error in the module",
    () => moduleFile("agents.mjs", 'const settings = JSON.parse("{\\"a\\": 1,}");\nexport default settings;\n'),
    (file) => new RegExp(`: it threw while loading: Expected double-quoted property name in JSON at position 8 \\(at ${file}:1:23\\)$`),
  ],
  [
    "a thrown value with no string form (its JSON instead)",
    () => moduleFile("agents.mjs", 'throw Object.assign(Object.create(null), { reason: "config missing" });\n'),
    () => /: it threw while loading: \{"reason":"config missing"\}$/,
  ],
  [
    "a thrown value with neither a string form nor JSON",
    () => moduleFile("agents.mjs", "const value = Object.create(null);\nvalue.self = value;\nthrow value;\n"),
    () => /: it threw while loading: a value with no text form$/,
  ],
  [
    "a method left unimplemented",
    () => join(FIXTURES, "unimplemented.js"),
    // Thrown inside @golem-stream/server (linked outside node_modules here), placed at the module's call of implement.
    () =>
      /: it threw while loading: TypeError: agent type words: method split has no implementation \(at test\/fixtures\/agents\/unimplemented\.js:6:68\)$/,
  ],
  [
    "no default export",
    () => moduleFile("agents.mjs", "export const catalogue = {};\n"),
    () => /: no default export: end it with export default defineCatalogue\(/,
  ],
  [
    "a function as default export",
    () => moduleFile("agents.mjs", "export default () => ({});\n"),
    () => /: invalid catalogue: the catalogue is a function/,
  ],
  [
    "the wrong shape",
    () => moduleFile("agents.mjs", `export default { text: { default: [${untypedType("x")}] } };\n`),
    () => /: invalid catalogue: the catalogue has an unknown field "text": only "applications"/,
  ],
  [
    "an environment with no agent type",
    () => moduleFile("agents.mjs", "export default { applications: { text: { default: [] } } };\n"),
    () => /: invalid catalogue: application "text": environment "default" has no agent type$/,
  ],
  [
    "an invalid schema (checked as it is served)",
    () =>
      moduleFile(
        "agents.mjs",
        `export default { applications: { text: { default: [{ ...${untypedType("x")}, constructorParameters: { root: { kind: "u33", value: {} } } }] } } };\n`,
      ),
    () => /: invalid catalogue: application "text": environment "default": agent type "x": constructor parameters: .*u33/,
  ],
  [
    "an invalid schema (defineCatalogue at load)",
    () => join(FIXTURES, "bad-schema.js"),
    () => /: invalid catalogue: application "text": environment "default": agent type "broken": method "run": result: .*u33/,
  ],
  [
    "the demo's environment, with --demo",
    () => moduleFile("agents.mjs", `export default { applications: { demo: { default: [${untypedType("mine")}] } } };\n`),
    () => /: application "demo", environment "default" is the demo's: rename it, or serve without the demo$/,
    ["--demo"],
  ],
];

it.each(CASES)("refuses %s: one line naming the file, exit 78, no stack, nothing created", async (_what, makeFile, message, extra = []) => {
  const file = makeFile();
  const dataDir = join(scratchDir(), "state");
  const result = await run(["serve", "--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--agents", file, ...extra]);
  expect(result.code).toBe(EXIT.agentsInvalid);
  expect(result.stdout.length).toBe(0);
  const lines = result.stderr.split("\n").filter((line) => line !== "");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^golem-stream: --agents ${escape(file)}: `));
  expect(lines[0]?.slice("golem-stream: ".length)).toMatch(message(escape(file)));
  expect(result.stderr).not.toMatch(/\n\s+at /);
  expect(existsSync(dataDir)).toBe(false);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

it("--allow-catalogue-drift without --store is a usage error: it only applies to a cluster node", async () => {
  const result = await run([
    "serve",
    "--port",
    "0",
    "--token",
    TOKEN,
    "--data-dir",
    join(scratchDir(), "state"),
    "--allow-catalogue-drift",
  ]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toBe(
    "golem-stream: --allow-catalogue-drift only applies to a cluster node: add --store postgres://USER@HOST:PORT/DATABASE\n",
  );
});
