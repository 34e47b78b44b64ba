/**
 * A server's names and messages holding terminal escape sequences (test/fixtures/agents/hostile-names.js,
 * served by a real `serve --agents`), as a hostile or compromised server's could: the CLI shows
 * them escaped wherever it prints them for a person (`types`, an invocation's or a stream's
 * failure, a refused method, the banner), so none reaches the terminal. What a command prints as
 * data stays the server's: `types --json` has the names as they are.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, startServeAgents, type ServerProcess } from "./support/processes.js";

const MODULE = "test/fixtures/agents/hostile-names.js";
/** The module's agent type name and its agents' failure message. */
const NAME = "esc\x1b]0;PWNED-TITLE\x07\x1b[31mred\x1b[0m";
const MESSAGE = "bad\x1b[2J\rthing\u202Eexe.txt";
const SHOWN_NAME = "esc\\u001b]0;PWNED-TITLE\\u0007\\u001b[31mred\\u001b[0m";
const SHOWN_MESSAGE = "bad\\u001b[2J\\rthing\\u202eexe.txt";
/** C0 controls but the newline that ends each line, DEL, C1 controls and the bidi controls. */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
const SELECTOR = ["-a", "esc", "-e", "prod"];

describe("names and messages a server chose reach the terminal escaped", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServeAgents(MODULE);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("types shows the agent type's, a field's and a variant case's names escaped; --json keeps them as the server sent them", async () => {
    const shown = await run(["types", ...SELECTOR], { env: server.env });
    expect(shown.code).toBe(EXIT.success);
    const text = shown.stdout.toString();
    expect(text).not.toMatch(UNSAFE);
    expect(text).toContain(`  ${SHOWN_NAME}()\n`);
    expect(text).toContain("    go(wipe\\u001b[2J: string) -> string\n");
    expect(text).toContain("    pick(how: variant{cut\\u001b[2J: string, plain})\n");

    const json = await run(["types", ...SELECTOR, "--json"], { env: server.env });
    expect(json.code).toBe(EXIT.success);
    const document = JSON.parse(json.stdout.toString()) as { agentTypes: { name: string }[] };
    expect(document.agentTypes.map((type) => type.name)).toEqual([NAME]);
  });

  it("a stream's failure quotes the agent's message escaped; its items and --output json keep what the server sent", async () => {
    const stream = await run(["invoke", NAME, "items", ...SELECTOR, "-c", "{}"], { env: server.env });
    expect(stream.code).toBe(EXIT.invocationFailed);
    // The items are the command's output, printed as they came; only the failure is escaped.
    expect(stream.stdout.toString()).toBe("first\n");
    expect(stream.stderr.toString()).not.toMatch(UNSAFE);
    expect(stream.stderr.toString()).toContain(`stream $ ended with an error (producer-error): ${SHOWN_MESSAGE}\n`);

    // --output json is data: the stream's end event has the message as the server sent it (JSON escapes it).
    const json = await run(["invoke", NAME, "items", ...SELECTOR, "-c", "{}", "--output", "json"], { env: server.env });
    expect(json.code).toBe(EXIT.invocationFailed);
    const events = json.stdout
      .toString()
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { event: string; outcome?: { message?: string } });
    expect(events.find((event) => event.event === "end")?.outcome?.message).toBe(MESSAGE);
  });

  it("an argument left out is named by the server's field name, escaped", async () => {
    const missing = await run(["invoke", NAME, "go", ...SELECTOR, "-c", "{}"], { env: server.env });
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr.toString()).not.toMatch(UNSAFE);
    expect(missing.stderr.toString()).toContain("wipe\\u001b[2J");
  });

  it("a method the agent type does not have is refused naming the type and its methods escaped", async () => {
    const refused = await run(["invoke", NAME, "nope", ...SELECTOR, "-c", "{}"], { env: server.env });
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr.toString()).not.toMatch(UNSAFE);
    expect(refused.stderr.toString()).toContain(`agent type "${SHOWN_NAME}" has no method "nope" (methods: go, items, pick)`);
  });

  it("serve's banner names the module's agent type escaped", () => {
    const banner = server.running.stdout().toString();
    expect(banner).not.toMatch(UNSAFE);
    expect(banner).toContain(`agents of ${MODULE}: application esc, environment prod: ${SHOWN_NAME}\n`);
  });
});
