/**
 * The main jobs, end to end: the real `golem-stream` executable as child
 * processes against a real `golem-stream serve` on loopback.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT, EXIT_INTERNAL } from "../src/exit-codes.js";
import { TOKEN, itemsOf, lines, run, scratchDir, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

let server: ServerProcess;
const ME = ["-c", '{"name":"test"}'];

beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  const stopped = await server.stop();
  expect(stopped.code).toBe(0);
});

describe("digest and split through the CLI", () => {
  it("pipes a large file through digest and gets its exact SHA-256 and size", async () => {
    const data = randomBytes(12 * 1024 * 1024 + 7);
    const result = await run(["invoke", "echo", "digest", ...ME, "-"], { env: server.env, stdin: data });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    expect(lines(result.stdout).map((l) => JSON.parse(l) as unknown)).toEqual([
      { result: { bytes: String(data.length), sha256: createHash("sha256").update(data).digest("hex") } },
    ]);
  });

  it("pipes a large text through split: every line once, in order, and the upper-cased bytes intact", async () => {
    // Few, long lines: every line is one durable item on the server, every byte of upper one packed byte.
    const text = Array.from({ length: 600 }, (_, i) => `line ${i} ünïcödé ${randomBytes(1200 + i).toString("base64")}`).join("\n") + "\n";
    expect(text.length).toBeGreaterThan(1024 * 1024);
    const result = await run(["invoke", "echo", "split", ...ME, "-"], { env: server.env, stdin: text });
    expect(result.code).toBe(EXIT.success);
    const out = lines(result.stdout).map((l) => JSON.parse(l) as { stream?: string; item?: string; base64?: string; result?: unknown });
    expect(itemsOf(result.stdout, "$.lines")).toEqual(text.split("\n").slice(0, -1));
    const upper = Buffer.concat(out.filter((l) => l.stream === "$.upper").map((l) => Buffer.from(l.base64 as string, "base64")));
    // The demo's split upper-cases ASCII letters byte by byte (a stream<u8> knows no characters).
    const asciiUpper = Buffer.from(text).map((b) => (b >= 0x61 && b <= 0x7a ? b - 0x20 : b));
    expect(upper.length).toBe(asciiUpper.length);
    expect(createHash("sha256").update(upper).digest("hex")).toBe(createHash("sha256").update(asciiUpper).digest("hex"));
    expect(out.at(-1)).toEqual({ result: { upper: "$.upper", lines: "$.lines" } });
  });

  it("writes a single binary output stream raw to stdout", async () => {
    const result = await run(["invoke", "echo", "blobs", ...ME, "3", "1000"], { env: server.env });
    expect(result.code).toBe(EXIT.success);
    expect(result.stdout.length).toBe(3000);
  });

  it("--output json prints a 16 MiB binary item as one blob line, past the 8 MiB of a protocol message", async () => {
    const size = 16 * 1024 * 1024;
    const result = await run(["invoke", "echo", "blobs", ...ME, "1", String(size), "--output", "json"], { env: server.env });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    const events = lines(result.stdout).map((line) => JSON.parse(line) as { event: string; base64?: string });
    const blobs = events.filter((event) => event.event === "blob");
    expect(blobs).toHaveLength(1);
    expect(Buffer.from(blobs[0]!.base64!, "base64").length).toBe(size);
    expect(events.at(-1)).toEqual({ event: "finished", outcome: { kind: "success" } });
  });

  it("converts plain and native arguments to the same invocation", async () => {
    const plain = await run(["invoke", "echo", "count", ...ME, "3", "0"], { env: server.env });
    const native = await run(
      [
        "invoke",
        "echo",
        "count",
        "--native",
        "-c",
        '{"kind":"record","value":{"fields":[{"kind":"string","value":"test"}]}}',
        '{"kind":"u32","value":3}',
        '{"kind":"u32","value":0}',
      ],
      { env: server.env },
    );
    expect(plain.code).toBe(EXIT.success);
    expect(native.stdout.toString()).toBe(plain.stdout.toString());
    // One output stream: bare output, one item per line, the result (the stream itself) omitted.
    expect(plain.stdout.toString()).toBe("0\n1\n2\n");
    expect(plain.stderr).toBe("");
  });

  it("names nested output streams by the item that exposed them and reads them all", async () => {
    const result = await run(["invoke", "echo", "groups", ...ME, "20", "5"], { env: server.env });
    expect(result.code).toBe(EXIT.success);
    const groups = itemsOf(result.stdout, "$") as { name: string; items: string }[];
    expect(groups.map((g) => g.items)).toEqual(Array.from({ length: 20 }, (_, i) => `$[${i}].items`));
    for (const group of groups) expect(itemsOf(result.stdout, group.items)).toEqual([0, 1, 2, 3, 4]);
    expect(result.stdout.toString()).not.toContain("$?");
  });

  it("prints a structured event stream with --output json", async () => {
    const result = await run(["invoke", "echo", "reverse", ...ME, "-", "--output", "json"], { env: server.env, stdin: "abc\nδεζ\n" });
    expect(result.code).toBe(EXIT.success);
    const events = lines(result.stdout).map((l) => JSON.parse(l) as { event: string; value?: unknown });
    expect(events.map((e) => e.event)).toEqual(["accepted", "result", "item", "item", "end", "finished"]);
    expect(events.filter((e) => e.event === "item").map((e) => e.value)).toEqual([
      { kind: "string", value: "cba" },
      { kind: "string", value: "ζεδ" },
    ]);
  });
});

describe("exit codes", () => {
  it("1: the invocation was accepted and an output stream failed", async () => {
    const result = await run(["invoke", "echo", "fail", ...ME, "2"], { env: server.env });
    expect(result.code).toBe(EXIT.invocationFailed);
    expect(itemsOf(result.stdout, "$")).toEqual([0, 1]);
    expect(result.stderr).toMatch(/producer-error/);
  });

  it.each([
    ["an unknown method", ["invoke", "echo", "nope", ...ME]],
    ["a missing argument", ["invoke", "echo", "count", ...ME, "3"]],
    ["a non-stream argument given -", ["invoke", "echo", "count", ...ME, "-", "1"]],
    ["an out-of-range argument", ["invoke", "echo", "count", ...ME, "-1", "0"]],
    ["malformed native JSON", ["invoke", "echo", "count", "--native", ...ME, "{", "0"]],
    ["an unknown option", ["invoke", "echo", "count", "--frobnicate"]],
    ["a missing constructor", ["invoke", "echo", "count", "1", "0"]],
    ["an upper-case phantom id", ["invoke", "echo", "count", ...ME, "1", "0", "--phantom-id", "994DF72A-EBC7-40E0-A8EF-C9CE258F3DA7"]],
    ["a phantom id without hyphens", ["invoke", "echo", "count", ...ME, "1", "0", "--phantom-id", "994df72aebc740e0a8efc9ce258f3da7"]],
  ])("2: %s", async (_, args) => {
    const result = await run(args, { env: server.env });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stdout.length).toBe(0);
    expect(result.stderr).not.toBe("");
  });

  it.each([
    ["4", "994df72a-ebc7-40e0-a8ef-c9ce258f3da7"],
    ["7", "01890a5d-ac96-774b-bcce-b302099a8057"],
    ["1", "994df72a-ebc7-10e0-a8ef-c9ce258f3da7"],
  ])("0: a phantom id of UUID version %s (protocol 2: only attempt ids and provisional references are UUIDv4)", async (_, id) => {
    const result = await run(["invoke", "echo", "count", ...ME, "2", "0", "--phantom-id", id], { env: server.env });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    expect(itemsOf(result.stdout, "$")).toEqual([0, 1]);
  });

  it("2: a checkpoint that already exists, or cannot be written", async () => {
    const dir = scratchDir();
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(dir, "taken.ckpt"), "{}");
    const exists = await run(["invoke", "echo", "count", ...ME, "1", "0", "--checkpoint", join(dir, "taken.ckpt")], { env: server.env });
    expect(exists.code).toBe(EXIT.usage);
    // The resume it suggests carries the server in effect (here GOLEM_STREAM_URL), as every resume hint does.
    expect(exists.stderr).toContain(
      `already exists; continue that invocation with \`golem-stream resume ${join(dir, "taken.ckpt")} --url ${server.url}\``,
    );
    const missing = await run(["invoke", "echo", "count", ...ME, "1", "0", "--checkpoint", join(dir, "no", "such", "dir.ckpt")], {
      env: server.env,
    });
    expect(missing.code).toBe(EXIT.usage);
  });

  it("2: no token at all", async () => {
    const result = await run(["types"], { env: { GOLEM_STREAM_URL: server.url } });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toMatch(/GOLEM_STREAM_TOKEN/);
  });

  it("3: a token the server does not accept", async () => {
    const result = await run(["invoke", "echo", "count", ...ME, "1", "0"], { env: { ...server.env, GOLEM_STREAM_TOKEN: "wrong" } });
    expect(result.code).toBe(EXIT.rejected);
    expect(result.stderr).toMatch(/unauthenticated/);
  });

  it("4: nothing listens at the URL", async () => {
    const result = await run(["types", "--url", "http://127.0.0.1:1", "--token", TOKEN]);
    expect(result.code).toBe(EXIT.connectionLost);
  });
});

describe("operator commands", () => {
  it("types lists the demo catalogue", async () => {
    const result = await run(["types"], { env: server.env });
    expect(result.code).toBe(EXIT.success);
    expect(result.stdout.toString()).toContain("digest(data: stream<u8>) -> record{bytes: u64, sha256: string}");
  });

  it("token inspect decodes a real session token and says it did not verify it", async () => {
    const dir = scratchDir();
    const checkpoint = join(dir, "run.ckpt");
    const invoked = await run(["invoke", "echo", "count", ...ME, "1", "0", "--checkpoint", checkpoint], { env: server.env });
    expect(invoked.code).toBe(EXIT.success);
    const { readFileSync } = await import("node:fs");
    const sessionToken = (JSON.parse(readFileSync(checkpoint, "utf8")) as { sessionToken: string }).sessionToken;
    const human = await run(["token", "inspect", sessionToken]);
    expect(human.code).toBe(EXIT.success);
    expect(human.stdout.toString()).toMatch(/^kind\s+session$/m);
    expect(human.stdout.toString()).toMatch(/NOT VERIFIED/);
    const json = await run(["token", "inspect", "-", "--json"], { stdin: `${sessionToken}\n` });
    const fields = JSON.parse(json.stdout.toString()) as { kind: string; signatureVerified: boolean; fields: Record<string, string> };
    expect(fields).toMatchObject({ kind: "session", signatureVerified: false });
    expect(fields.fields["method"]).toBe("count");
    expect(fields.fields["application"]).toBe("demo");
  });

  it("token inspect refuses what is not a token", async () => {
    const result = await run(["token", "inspect", "gai1_!!"]);
    expect(result.code).toBe(EXIT.usage);
  });

  it.each([[[]], [["serve"]], [["invoke"]], [["resume"]], [["token"]], [["token", "inspect"]], [["types"]], [["codegen"]]])(
    "%j --help shows examples",
    async (command) => {
      const result = await run([...command, "--help"]);
      expect(result.code).toBe(EXIT.success);
      expect(result.stdout.toString()).toMatch(/Examples:\n  \$ golem-stream/);
    },
  );

  it.each([[[]], [["invoke"]], [["resume"]]])("%j --help lists every exit code the README lists, and no other", async (command) => {
    const help = (await run([...command, "--help"])).stdout.toString();
    const section = help.slice(help.indexOf("Exit codes:"));
    const inHelp = [...section.matchAll(/^  (\d+) /gm)].map((m) => Number(m[1]));
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("## Exit codes"), readme.indexOf("## Checkpoint v1"));
    const inReadme = [...table.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
    const all = [...Object.values(EXIT), EXIT_INTERNAL].sort((a, b) => a - b);
    expect(inHelp).toEqual(all);
    expect(inReadme).toEqual(all);
  });

  it("resume --help says that stdin is not replayable and what a pending start does", async () => {
    const help = (await run(["resume", "--help"])).stdout.toString();
    expect(help).toMatch(/stdin is not replayable/);
    expect(help).toMatch(/source-unavailable/);
    expect(help).toMatch(/same attempt id/);
  });
});
