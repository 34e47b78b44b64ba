/**
 * Text a server or an agent chose reaches a person's terminal escaped (src/io/printable.ts): the
 * function itself, and the places that print such text (`types`, stderr lines, progress bars,
 * `serve`'s banner). cli-hostile-names.e2e.test.ts runs the same against a real server.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { t } from "@golem-stream/schema-value";
import type { Catalogue } from "@golem-stream/server";
import { formatCatalogue } from "../src/commands/types.js";
import { describeServedAgents } from "../src/commands/serve-agents.js";
import { decodeCatalogue } from "../src/discovery.js";
import { report } from "../src/io/cli-io.js";
import type { CliIo } from "../src/io/cli-io.js";
import { describeProgress } from "../src/io/progress-line.js";
import { printable } from "../src/io/printable.js";

/** The review's agent type name: sets the window title, then turns the text red. */
const HOSTILE = "esc\x1b]0;PWNED-TITLE\x07\x1b[31mred\x1b[0m";
const SHOWN = "esc\\u001b]0;PWNED-TITLE\\u0007\\u001b[31mred\\u001b[0m";
/** C0, DEL, C1 and the bidi controls: nothing a terminal would act on, or show reordered. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

describe("printable", () => {
  it("writes every C0 control, DEL, every C1 control and the bidi controls as JSON escapes", () => {
    expect(printable(HOSTILE)).toBe(SHOWN);
    expect(printable("a\nb\rc\td\be\ff")).toBe("a\\nb\\rc\\td\\be\\ff");
    expect(printable("\u0000\u007f\u0080\u009b[2J\u009f")).toBe("\\u0000\\u007f\\u0080\\u009b[2J\\u009f");
    expect(printable("user\u202Etxt.exe")).toBe("user\\u202etxt.exe");
    for (const bidi of ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"])
      expect(printable(bidi)).toBe(`\\u${bidi.charCodeAt(0).toString(16)}`);
    for (let code = 0; code <= 0x2069; code++) expect(UNSAFE.test(printable(String.fromCharCode(code)))).toBe(false);
  });

  it("leaves other text as it is: other scripts, emoji, joiners, quotes and backslashes", () => {
    for (const text of ["plain words", "café 日本語 עברית", "👩‍💻 ok", 'say "hi" \\ bye', "\u00a0nbsp", "\u200dzwj\u200e"])
      expect(printable(text)).toBe(text);
  });

  it("is JSON for what it escapes, so printed JSON stays JSON that means the same, and escaping twice changes nothing", () => {
    const text = `${HOSTILE}\u0085\u009b\u202e\u2066 end`;
    expect(JSON.parse(`"${printable(text)}"`)).toBe(text);
    const json = JSON.stringify({ name: text });
    expect(JSON.parse(printable(json))).toEqual({ name: text });
    expect(printable(printable(text))).toBe(printable(text));
  });
});

describe("where the CLI prints what a server chose", () => {
  it("types: agent type, method and field names are shown escaped", () => {
    const [agentType] = decodeCatalogue(
      JSON.stringify({
        agentTypes: [
          {
            name: HOSTILE,
            constructorParameters: t.graph(t.record({ "f\x1b[2J": t.string() })),
            methods: [{ name: "m\r\x1b[1A", parameters: t.graph(t.record({ "p\u202e": t.u32() })), result: t.graph(t.stream(t.u8())) }],
          },
        ],
      }),
    );
    const text = formatCatalogue({ application: "a\x07", environment: "e", agentTypes: [agentType!] });
    expect(text.replaceAll("\n", "")).not.toMatch(UNSAFE);
    expect(text.split("\n").filter((line) => line !== "")).toEqual([
      "a\\u0007/e",
      `  ${SHOWN}(f\\u001b[2J: string)`,
      "    m\\r\\u001b[1A(p\\u202e: u32) -> stream<u8>",
    ]);
  });

  it("a line of diagnostics is one line, whatever the message it quotes holds", () => {
    const stderr = new PassThrough();
    let text = "";
    stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
    const io = { stdin: new PassThrough(), stdout: new PassThrough(), stderr, env: {}, signal: new AbortController().signal } as CliIo;
    report(io, `golem-stream: invocation failed (producer-error): ${HOSTILE}\ngolem-stream: all fine`);
    expect(text).toBe(`golem-stream: invocation failed (producer-error): ${SHOWN}\\ngolem-stream: all fine\n`);
  });

  it("a progress bar shows a stream named by the server's field names escaped", () => {
    const line = describeProgress(
      { arrow: "←", label: `$.${HOSTILE}`, unit: "items", items: 1, bytes: 2, startedAt: 0, note: "done", finishedAt: 1000 },
      1000,
    );
    expect(line).toContain(`← $.${SHOWN} | 1 item`);
    expect(line).not.toMatch(UNSAFE);
  });

  it("serve's banner shows an --agents module's names escaped, in its lines and in the commands it suggests", () => {
    const catalogue = { applications: { "app\x1b[8m": { "env\u2066": [{ name: HOSTILE }] } } } as unknown as Catalogue;
    const served = describeServedAgents("agents.js", catalogue, false);
    expect(served.lines).toEqual([`agents of agents.js: application app\\u001b[8m, environment env\\u2066: ${SHOWN}`]);
    expect(served.calls("golem-stream")).toEqual(["golem-stream types -a 'app\\u001b[8m' -e 'env\\u2066'"]);
  });

  it("serve's banner names at most eight agent types of an environment, then counts the rest: a long catalogue stays one short line", () => {
    const types = Array.from({ length: 50 }, (_, i) => ({ name: `agent${i}` }));
    const served = describeServedAgents("agents.js", { applications: { app: { env: types } } } as unknown as Catalogue, false);
    expect(served.lines).toEqual([
      "agents of agents.js: application app, environment env: agent0, agent1, agent2, agent3, agent4, agent5, agent6, agent7 and 42 more",
    ]);
    // Nine are all named: "and 1 more" would take the ninth name's room.
    const nine = describeServedAgents("agents.js", { applications: { app: { env: types.slice(0, 9) } } } as unknown as Catalogue, false);
    expect(nine.lines[0]).toMatch(/: agent0, .*, agent7, agent8$/);
  });
});
