/**
 * The codegen round trip, with real processes: start the demo server, run
 * the real `golem-stream codegen` against it, compile its output with `tsc`
 * (strict, NodeNext) in a folder that depends on the workspace packages,
 * then import the compiled module and call every demo method through
 * `client.connect` with the generated contract. The calls' source also holds
 * type assertions, so a generated contract that is untyped, typed wrong or
 * mismatching the server fails to compile or to connect.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, scratchDir, startServer, TOKEN, type ServerProcess } from "./support/processes.js";

const require = createRequire(import.meta.url);
const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));
const TSC = require.resolve("typescript/bin/tsc");

let server: ServerProcess;
beforeAll(async () => {
  server = await startServer(scratchDir());
});
afterAll(async () => {
  await server?.stop();
});

/** This process's umask, which the CLI it starts inherits (Linux; process.umask() to read it is deprecated). */
function umask(): number {
  const line = /^Umask:\s+([0-7]+)$/m.exec(readFileSync("/proc/self/status", "utf8"));
  if (line === null) throw new Error("no Umask line in /proc/self/status");
  return Number.parseInt(line[1] as string, 8);
}

/** A project outside the workspace whose node_modules link to the workspace's packages, as an installed app's would. */
function consumerProject(): string {
  const dir = scratchDir();
  mkdirSync(join(dir, "node_modules", "@golem-stream"), { recursive: true });
  mkdirSync(join(dir, "node_modules", "@types"), { recursive: true });
  for (const name of ["contract", "client"]) symlinkSync(join(PACKAGES, name), join(dir, "node_modules", "@golem-stream", name), "dir");
  symlinkSync(dirname(require.resolve("@types/node/package.json")), join(dir, "node_modules", "@types", "node"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "codegen-consumer", private: true, type: "module" }));
  const compilerOptions = {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    outDir: "out",
    rootDir: ".",
    types: ["node"],
    skipLibCheck: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
  return dir;
}

/** Calls every demo method through `client.connect` with the generated contract; the type assertions are part of the test. */
const CALLS = `
import { createClient, type TypedOutput } from "@golem-stream/client";
import { echoContract } from "./agents.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(): void => undefined;

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

export async function callEveryMethod(url: string, token: string) {
  const client = createClient({ url, token });
  const echo = await client.connect(echoContract, { application: "demo", environment: "default", constructor: { name: "generated" } });
  const bytes = new TextEncoder().encode("ab\\ncd\\nef");

  const reverse = await collect(await echo.reverse({ input: ["abc", "héllo"] }));
  const digest = await echo.digest({ data: [bytes.subarray(0, 3), bytes.subarray(3)] });
  assertType<Equal<typeof digest, { bytes: bigint; sha256: string }>>();
  const count = await collect(await echo.count({ to: 4, delayMs: 0 }));
  assertType<Equal<typeof count, number[]>>();
  const blobs = await collect(await echo.blobs({ count: 2, size: 3 }));
  const { upper, lines } = await echo.split({ data: [bytes] });
  assertType<Equal<typeof upper, TypedOutput<Uint8Array>>>();
  assertType<Equal<typeof lines, TypedOutput<string>>>();
  const [upperChunks, lineItems] = await Promise.all([collect(upper), collect(lines)]);
  const groups: [string, number[]][] = [];
  for await (const group of await echo.groups({ groups: 2, per: 3 })) groups.push([group.name, await collect(group.items)]);
  const failed: number[] = [];
  let failure: unknown;
  try {
    for await (const item of await echo.fail({ after: 2 })) failed.push(item);
  } catch (error) {
    failure = error;
  }
  const tally = await echo.tally({ input: ["a", "bc"] });
  if (url === "") {
    // Shapes the generated contract must refuse at compile time (never run).
    // @ts-expect-error count takes numbers
    await echo.count({ to: "4", delayMs: 0 });
    // @ts-expect-error tally's input is a stream of strings
    await echo.tally({ input: [1, 2] });
    // @ts-expect-error the echo agent has no such method
    await echo.missing({});
  }
  assertType<Equal<typeof tally, { items: bigint; bytes: bigint }>>();

  return {
    reverse,
    digest: { bytes: String(digest.bytes), sha256: digest.sha256 },
    count,
    blobs: blobs.map((blob) => ({ bytes: [...blob.bytes], mimeType: blob.mimeType })),
    upper: new TextDecoder().decode(Buffer.concat(upperChunks)),
    lines: lineItems,
    groups,
    fail: { items: failed, error: (failure as { kind?: unknown; code?: unknown } | undefined)?.code },
    tally: { items: String(tally.items), bytes: String(tally.bytes) },
  };
}

`;

function tsc(dir: string): { code: number; output: string } {
  try {
    execFileSync(process.execPath, [TSC, "-p", dir], { encoding: "utf8", stdio: "pipe" });
    return { code: 0, output: "" };
  } catch (error) {
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    return { code: failed.status ?? 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

describe("golem-stream codegen round trip (real server, real CLI, real tsc)", () => {
  it("generates, compiles and calls every demo method typed through client.connect", async () => {
    const dir = consumerProject();
    const generated = await run(["codegen", "--url", server.url, "--token", TOKEN, "--out", join(dir, "agents.ts")]);
    expect(generated.stderr).toBe("1 contract written to " + join(dir, "agents.ts") + ": echoContract (echo)\n");
    expect(generated.code).toBe(0);
    expect(readFileSync(join(dir, "agents.ts"), "utf8")).toMatch(/^export const echoContract = defineAgentType\(\{$/m);
    // Source code gets ordinary permissions (a build user or a container reads it), unlike the CLI's private files.
    expect(statSync(join(dir, "agents.ts")).mode & 0o777).toBe(0o666 & ~umask());
    writeFileSync(join(dir, "calls.ts"), CALLS);
    expect(tsc(dir)).toEqual({ code: 0, output: "" });

    const compiled = (await import(pathToFileURL(join(dir, "out", "calls.js")).href)) as {
      callEveryMethod(url: string, token: string): Promise<unknown>;
    };
    expect(await compiled.callEveryMethod(server.url, TOKEN)).toEqual({
      reverse: ["cba", "olléh"],
      digest: { bytes: "8", sha256: createHash("sha256").update("ab\ncd\nef").digest("hex") },
      count: [0, 1, 2, 3],
      blobs: [
        { bytes: [0, 1, 2], mimeType: "application/octet-stream" },
        { bytes: [1, 2, 3], mimeType: "application/octet-stream" },
      ],
      upper: "AB\nCD\nEF",
      lines: ["ab", "cd", "ef"],
      groups: [
        ["group-0", [0, 1, 2]],
        ["group-1", [0, 1, 2]],
      ],
      fail: { items: [0, 1], error: "producer-error" },
      tally: { items: "2", bytes: "3" },
    });
  });

  it("fails to compile when the generated contract is wrong (a type changed in agents.ts)", async () => {
    const dir = consumerProject();
    const generated = await run(["codegen", "--out", "-"], { env: server.env });
    expect(generated.code).toBe(0);
    const source = generated.stdout.toString("utf8");
    // tally's input becomes a stream of u32: the calls' strings no longer fit.
    const wrong = source.replace(/(tally: \{\s+params: t\.record\(\{ input: t\.stream\()t\.string\(\)/, "$1t.u32()");
    expect(wrong).not.toBe(source);
    writeFileSync(join(dir, "agents.ts"), wrong);
    writeFileSync(join(dir, "calls.ts"), CALLS);
    const compiled = tsc(dir);
    expect(compiled.code).not.toBe(0);
    expect(compiled.output).toMatch(/calls\.ts/);
  });
});

describe("golem-stream codegen exit codes", () => {
  it("0 with the module on stdout; 2 unknown application; 3 refused token; 4 unreachable; 74 unwritable file", async () => {
    const stdout = await run(["codegen"], { env: server.env });
    expect([stdout.code, stdout.stderr]).toEqual([0, "1 contract: echoContract (echo)\n"]);
    expect(stdout.stdout.toString("utf8")).toMatch(/^\/\/ Generated by `golem-stream codegen` from the catalogue demo\/default\./);
    const unknown = await run(["codegen", "--application", "nope"], { env: server.env });
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      'golem-stream: discovery failed: not-found: the application or environment does not exist; this server serves demo/default (asked for application "nope", environment "default"; ' +
        "choose them with -a/--application and -e/--environment, or GOLEM_STREAM_APPLICATION and GOLEM_STREAM_ENVIRONMENT)\n",
    ]);
    const refused = await run(["codegen", "--token", "not-the-token-0000"], { env: server.env });
    expect(refused.code).toBe(3);
    const unreachable = await run(["codegen", "--url", "http://127.0.0.1:1"], { env: server.env });
    expect(unreachable.code).toBe(4);
    const unwritable = await run(["codegen", "--out", join(scratchDir(), "missing", "agents.ts")], { env: server.env });
    expect(unwritable.code).toBe(74);
    expect(unwritable.stderr).toMatch(/^golem-stream: cannot write .*agents\.ts: ENOENT/);
  });
});

describe("the catalogue asked for: -a/-e, then GOLEM_STREAM_APPLICATION/GOLEM_STREAM_ENVIRONMENT, then demo/default", () => {
  it("types and codegen read the variables, a flag wins over them, and a not-found names what was asked", async () => {
    const elsewhere = { ...server.env, GOLEM_STREAM_APPLICATION: "shop", GOLEM_STREAM_ENVIRONMENT: "prod" };
    const types = await run(["types"], { env: elsewhere });
    expect(types.code).toBe(2);
    expect(types.stderr).toContain('(asked for application "shop", environment "prod"; choose them with -a/--application');
    const codegen = await run(["codegen"], { env: { ...server.env, GOLEM_STREAM_ENVIRONMENT: "prod" } });
    expect(codegen.code).toBe(2);
    expect(codegen.stderr).toContain('(asked for application "demo", environment "prod"; ');
    const flags = await run(["types", "-a", "demo", "-e", "default"], { env: elsewhere });
    expect([flags.code, flags.stderr]).toEqual([0, ""]);
    expect(flags.stdout.toString("utf8")).toContain("echo");
    const invoke = await run(["invoke", "echo", "count", "-c", '{"name":"me"}', "2", "0"], { env: elsewhere });
    expect(invoke.code).toBe(2);
    expect(invoke.stderr).toContain('(asked for application "shop", environment "prod"; ');
  });
});

describe("golem-stream codegen of a catalogue with a method named then", () => {
  it("exits 0 with the contract without then, and says so on stderr", async () => {
    const graph = (root: unknown) => ({ root });
    const record = { kind: "record", value: { fields: [] } };
    const catalogue = {
      application: "demo",
      environment: "default",
      agentTypes: [
        {
          name: "promise",
          constructorParameters: graph(record),
          methods: [
            { name: "then", parameters: graph(record) },
            { name: "ping", parameters: graph(record) },
          ],
          config: [],
        },
      ],
    };
    const http = createServer((_, response) => response.setHeader("content-type", "application/json").end(JSON.stringify(catalogue)));
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
      const result = await run(["codegen", "--url", url, "--token", TOKEN]);
      expect([result.code, result.stderr]).toEqual([
        0,
        "golem-stream: warning: promise.then is not in the generated contract: a typed agent with a method named then would be a thenable; call it with client.agent\n1 contract: promiseContract (promise)\n",
      ]);
      const source = result.stdout.toString("utf8");
      expect(source).toContain('// "then" is left out');
      expect(source).toContain("ping: { params: t.record({}) }");
      expect(source).not.toMatch(/^\s*then:/m);
    } finally {
      http.close();
    }
  });
});
