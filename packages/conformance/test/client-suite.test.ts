/**
 * The client suite against the adapter this package ships for
 * @golem-stream/client: every scenario is its own test case and passes (one
 * can be run by name: `-t "resume.after-cut"`). The adapter runs behind `tee`,
 * so every line of the adapter protocol the run exchanged is then validated
 * against schemas/client-adapter.schema.json.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientScenarios, runClientSuite } from "../src/index.js";
import { LOADED_CHECK_TIMEOUT_MS } from "./support/timeouts.js";

const ADAPTER = fileURLToPath(new URL("../dist/client/adapter/bin.js", import.meta.url));
const SCHEMA = fileURLToPath(new URL("../schemas/client-adapter.schema.json", import.meta.url));

let dir: string;
let adapter: string;
beforeAll(() => {
  if (!existsSync(ADAPTER)) throw new Error(`${ADAPTER} is missing: run \`pnpm build\` in packages/conformance first`);
  dir = mkdtempSync(join(tmpdir(), "golem-stream-client-suite-"));
  // One pair of files per adapter process ($$ is its shell's pid).
  adapter = `tee "${dir}/commands-$$.jsonl" | node "${ADAPTER}" | tee "${dir}/events-$$.jsonl"`;
});
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const scenarios = clientScenarios();

// Two at a time, as the command runs them by default. Each scenario gets three minutes, not the
// command's one: backpressure.stalled-reader moves ~100 MiB in steps of 64 items (10 s alone).
describe("@golem-stream/client passes each scenario", { concurrent: true, timeout: LOADED_CHECK_TIMEOUT_MS + 30_000 }, () => {
  for (const scenario of scenarios) {
    it(`${scenario.id}: ${scenario.expectation}`, async () => {
      const report = await runClientSuite({ adapter, only: [scenario.id], checkTimeoutMs: LOADED_CHECK_TIMEOUT_MS });
      const result = report.results.find((r) => r.id === scenario.id);
      expect(result, `${scenario.id} ran`).toBeDefined();
      expect(result!.status, `${scenario.id}: ${result!.saw}`).toBe("passed");
    });
  }
});

describe("the adapter protocol of the run", () => {
  it("has at least 20 scenarios", () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(20);
  });

  it("exchanges only lines the adapter protocol's schema allows, in both directions", () => {
    const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
    const schema = JSON.parse(readFileSync(SCHEMA, "utf8")) as { $defs: object };
    const validate = ajv.compile(schema);
    const files = readdirSync(dir);
    const lines = files.flatMap((file) =>
      readFileSync(join(dir, file), "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => ({ file, line })),
    );
    const types = new Set(lines.map(({ line }) => (JSON.parse(line) as { type: string }).type));
    const invalid = lines
      .filter(({ line }) => !validate(JSON.parse(line)))
      .map(({ file, line }) => `${file}: ${line.slice(0, 200)} ${JSON.stringify(validate.errors?.slice(0, 2))}`);
    expect(invalid.slice(0, 5)).toEqual([]);
    // The run used every command and the events that matter.
    for (const type of [
      "start",
      "attach",
      "feed",
      "endInput",
      "read",
      "cancel",
      "close",
      "ready",
      "accepted",
      "reconnecting",
      "revoked",
      "result",
      "stream",
      "item",
      "readDone",
      "streamEnd",
      "finished",
      "error",
      "cancelled",
      "checkpoint",
    ]) {
      expect(types, type).toContain(type);
    }
  });

  it("the schema refuses a line with an unknown member, an unknown type, or a missing member", () => {
    const validate = new Ajv2020({ strict: true, strictRequired: false }).compile(JSON.parse(readFileSync(SCHEMA, "utf8")) as object);
    expect(validate({ type: "read", stream: 0 })).toBe(true);
    expect(validate({ type: "read", stream: 0, surprise: true })).toBe(false);
    expect(validate({ type: "teleport" })).toBe(false);
    expect(validate({ type: "streamEnd", stream: 0 })).toBe(false);
    expect(validate({ type: "error", category: "server-violation", code: "invalid-channel", message: "m" })).toBe(true);
    expect(validate({ type: "error", category: "bad-luck", message: "m" })).toBe(false);
  });
});
