/**
 * docs/agents.md, "What is checked at start", shows the line `serve --agents` prints for each
 * module it refuses. This reads that table and runs each row's case as a real process, in a
 * folder standing for the doc's `/srv/app`, so a line the CLI no longer prints fails here
 * instead of misleading a reader: every row needs a case below, and every case a row.
 */
import { mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, TOKEN } from "./support/processes.js";

const DOC = fileURLToPath(new URL("../../../docs/agents.md", import.meta.url));
/** The folder the doc's lines say `serve` was started in. */
const DOC_DIR = "/srv/app";
/** What a line's leading `…` stands for in the table. */
const DOC_AGENTS = "./dist/agents.js";
const SERVER_PACKAGE = realpathSync(fileURLToPath(new URL("../node_modules/@golem-stream/server", import.meta.url)));

interface Setup {
  /** Files below the folder serve runs in, by relative path (a package.json of `"type": "module"` is there already). */
  readonly files: Record<string, string>;
  /** `--agents`, when not the doc's `./dist/agents.js`. */
  readonly agents?: string;
  readonly extra?: readonly string[];
}

const IMPORT_SERVER = 'import { defineAgentType, defineCatalogue, implement, t } from "@golem-stream/server";\n';
const EMPTY = "t.graph(t.record({}))";
const untyped = (name: string, parameters = EMPTY) =>
  `{ name: "${name}", constructorParameters: ${EMPTY}, config: [], methods: [{ name: "add", parameters: ${parameters}, result: t.graph(t.u32()) }], implementations: { add: async () => ({ kind: "u32", value: 0 }) } }`;
const TALLY = `const tally = defineAgentType({
  name: "tally",
  constructor: t.record({ unit: t.string() }),
  methods: { sum: { params: t.record({ numbers: t.stream(t.f64()) }), result: t.f64() }, countdown: { params: t.record({ from: t.u32() }) } },
});
`;

/** One case per row, by the row's first cell; one setup per line the row shows, in order. */
const CASES: Record<string, readonly Setup[]> = {
  "no such file": [{ files: {} }],
  "a folder": [{ files: { "dist/agents.js": "export default {};\n" }, agents: "./dist" }],
  "a syntax error (also one the TypeScript loader finds; in a module it imports, that module is named)": [
    {
      files: {
        "dist/agents.js": `${IMPORT_SERVER}\n${TALLY}\nexport default defineCatalogue({\n  applications: {\n    tutorial: }\n});\n`,
      },
    },
  ],
  "an import that cannot be found": [{ files: { "dist/agents.js": 'import pg from "pg";\n\nexport default pg;\n' } }],
  "an error thrown while it loads (including `implement` missing a method or given one the contract does not declare, `defineAgentType` refusing a schema)":
    [
      {
        files: {
          "dist/agents.js": `${IMPORT_SERVER}\nconst words = defineAgentType({ name: "words", constructor: t.record({}), methods: { split: { params: t.record({ text: t.string() }) } } });\n\nexport default defineCatalogue({ applications: { text: { default: [implement(words, {})] } } });\n`,
        },
      },
      {
        files: {
          "dist/agents.js": `${IMPORT_SERVER}\n${TALLY}\nconst agent = implement(tally, { sum: async () => 0, countDown: async () => undefined });\nexport default defineCatalogue({ applications: { tutorial: { default: [agent] } } });\n`,
        },
      },
    ],
  "a top-level `await` nothing left running can settle (Node alone would exit 13 without a word)": [
    { files: { "dist/agents.js": "const settings = await new Promise(() => {});\nexport default settings;\n" } },
  ],
  "no default export": [{ files: { "dist/agents.js": `${IMPORT_SERVER}\nexport const catalogue = {};\n` } }],
  'CommonJS (`require`, `module.exports`, `exports.default = …`) in a file Node reads as an ES module: Node\'s explanation of why (here the project\'s `package.json` says `"type": "module"`), then how to keep it an ES module':
    [{ files: { "dist/agents.js": 'const server = require("@golem-stream/server");\nmodule.exports = server;\n' } }],
  "a default export that is no catalogue": [
    { files: { "dist/agents.js": `${IMPORT_SERVER}\nexport default { text: { default: [${untyped("adder")}] } };\n` } },
  ],
  "a contract (`defineAgentType`) where its implementation belongs": [
    { files: { "dist/agents.js": `${IMPORT_SERVER}\n${TALLY}\nexport default { applications: { tutorial: { default: [tally] } } };\n` } },
  ],
  "an invalid schema, name or implementation": [
    {
      files: {
        "dist/agents.js": `${IMPORT_SERVER}\nconst adder = ${untyped("adder", "t.graph(t.u32())")};\nexport default { applications: { math: { prod: [adder] } } };\n`,
      },
    },
  ],
  "a catalogue whose text, spelled out, passes 32 Mi units (about a byte each; 40 000 agent types of one small method are about 9 Mi): usually a type object reused in itself level after level (`x = t.tuple(x, x)` thirty times is a billion copies as text)":
    [
      {
        files: {
          "dist/agents.js": `${IMPORT_SERVER}\nlet x = t.string();\nfor (let i = 0; i < 30; i++) x = t.tuple(x, x);\nconst big = defineAgentType({ name: "big", constructor: t.record({}), methods: { take: { params: t.record({ x }) } } });\nexport default { applications: { data: { default: [implement(big, { take: async () => undefined })] } } };\n`,
        },
      },
    ],
  "with `--demo`, an environment the demo serves": [
    {
      files: { "dist/agents.js": `${IMPORT_SERVER}\nexport default { applications: { demo: { default: [${untyped("adder")}] } } };\n` },
      extra: ["--demo"],
    },
  ],
  "a TypeScript file without a loader": [{ files: { "src/agents.ts": "export default {};\n" }, agents: "./src/agents.ts" }],
};

/** The rows of the table under "What is checked at start": the first cell, and each `code span` of the second. */
function documentedRows(): Map<string, string[]> {
  const text = readFileSync(DOC, "utf8");
  const section = text.slice(text.indexOf("### What is checked at start"));
  const table = section.slice(section.indexOf("| problem | the line |"));
  const rows = new Map<string, string[]>();
  for (const line of table.split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const [problem = "", shown = ""] = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim().replaceAll("\\|", "|"));
    rows.set(
      problem,
      [...shown.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? ""),
    );
  }
  return rows;
}

const rows = documentedRows();

it("every row of the table has a case here, and every case a row", () => {
  expect([...rows.keys()].sort()).toEqual(Object.keys(CASES).sort());
});

it.each([...rows].flatMap(([problem, lines]) => lines.map((line, index) => [problem, index, line] as const)))(
  "%s (line %i) is what serve prints",
  async (problem, index, documented) => {
    const setup = CASES[problem]?.[index];
    expect(setup, `a case for line ${index} of row "${problem}"`).toBeDefined();
    const dir = realpathSync(scratchDir());
    writeFileSync(join(dir, "package.json"), '{ "name": "my-agents", "type": "module" }\n');
    mkdirSync(join(dir, "node_modules", "@golem-stream"), { recursive: true });
    symlinkSync(SERVER_PACKAGE, join(dir, "node_modules", "@golem-stream", "server"));
    for (const [name, source] of Object.entries(setup?.files ?? {})) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), source);
    }
    const agents = setup?.agents ?? DOC_AGENTS;
    const dataDir = join(scratchDir(), "state");
    const args = ["serve", "--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--agents", agents, ...(setup?.extra ?? [])];
    const result = await run(args, { cwd: dir });
    expect(result.code).toBe(EXIT.agentsInvalid);
    expect(result.stdout.length).toBe(0);
    const printed = result.stderr.replaceAll(dir, DOC_DIR);
    const expected = documented.startsWith("…") ? `golem-stream: --agents ${DOC_AGENTS}${documented.slice(1)}` : documented;
    expect(printed).toBe(`${expected}\n`);
  },
);
