/**
 * What a consumer gets from `npm install @golem-stream/…`: every package is
 * packed, and client, server, cli, store-postgres and conformance are each
 * installed with npm from the tarballs alone into a project outside the
 * workspace. There they run as ESM and as CommonJS (`require()` of ESM, Node
 * >= 20.19), type-check under `nodenext` and `bundler`, and export every type
 * their signatures use; the client and the client-only CLI talk to the
 * installed server, and the conformance kit's two commands run its client
 * suite against its own adapter. publint and @arethetypeswrong/core lint every tarball.
 * `PACK_CHECK_NODE=/path/to/node` runs the consumers on another Node (npm and the
 * type-checks stay on this one).
 *
 * A file missing from a tarball fails here: the consumers import every
 * entry point, run a real call through dist/, and the linters resolve every
 * path the manifests name.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { checkPackage, createPackageFromTarballData } from "@arethetypeswrong/core";
import { publint } from "publint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addDependency, consumerEnv, consumerNode, installConsumer } from "./support/consumer.js";
import { unexportedPublicTypes } from "./support/public-types.js";
import { typeCheck } from "./support/type-check.js";
import { packAll, tarballFiles, workspaceRoot, type Tarball } from "./support/tarballs.js";

const run = promisify(execFile);
/** The conformance kit's wait for the adapter (`--timeout`) and a scenario's deadline (`--check-timeout`) on a loaded machine. */
const KIT_WAIT_MS = 60_000;
const KIT_CHECK_DEADLINE_MS = 120_000;
const require = createRequire(import.meta.url);
const fixtures = path.resolve(import.meta.dirname, "../consumers");
const CONSUMERS = ["client", "server", "cli", "store-postgres", "conformance"] as const;
type Consumer = (typeof CONSUMERS)[number];

let root = "";
let tarballs: Tarball[] = [];
let server: ChildProcess | undefined;
let serverUrl = "";
const dir = (consumer: Consumer) => path.join(root, consumer);

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), "golem-stream-pack-check-"));
  tarballs = await packAll(path.join(root, "tarballs"));
  await Promise.all(
    // store-postgres installs as a cluster node may: without optional dependencies, so no SQLite.
    CONSUMERS.map((consumer) =>
      installConsumer(dir(consumer), path.join(fixtures, consumer), `@golem-stream/${consumer}`, tarballs, {
        omitOptional: consumer === "store-postgres",
      }),
    ),
  );
  const { stdout: version } = await run(consumerNode, ["--version"]);
  console.log(`consumers run on Node ${version.trim()} (${consumerNode})`);
  server = spawn(consumerNode, ["start.mjs"], { cwd: dir("server"), env: consumerEnv() });
  serverUrl = await listeningUrl(server, /^listening (\S+)$/m);
}, 300_000);

afterAll(async () => {
  if (server !== undefined) await stop(server);
  if (root !== "") rmSync(root, { recursive: true, force: true });
});

/** The URL a server process prints once it listens; rejects with its output if it exits first. */
function listeningUrl(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const url = pattern.exec(output)?.[1];
      if (url !== undefined) resolve(url);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the installed server exited (${code}) before listening:\n${output}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

async function node(consumer: Consumer, ...args: string[]): Promise<string> {
  const { stdout } = await run(consumerNode, args, { cwd: dir(consumer), env: consumerEnv() });
  return stdout;
}

describe("the tarballs", () => {
  it("each holds its README, the repository's LICENSE, a manifest pointing at the repository, and no tests", () => {
    const license = readFileSync(path.join(workspaceRoot, "LICENSE"));
    for (const tarball of tarballs) {
      const files = tarballFiles(tarball.file);
      expect(files.get("LICENSE")?.equals(license), `${tarball.name}: LICENSE`).toBe(true);
      expect(files.get("README.md")?.length ?? 0, `${tarball.name}: README.md`).toBeGreaterThan(500);
      const manifest = JSON.parse(files.get("package.json")?.toString() ?? "{}") as Record<string, unknown>;
      expect(manifest["repository"], tarball.name).toMatchObject({ url: "git+https://github.com/golemcloud/golem-stream.git" });
      expect(manifest["engines"], tarball.name).toEqual({ node: ">=20.19" });
      expect(
        [...files.keys()].filter((file) => /(^|\/)test\/|\.test\./.test(file)),
        tarball.name,
      ).toEqual([]);
      // The registry shows the README on its own: links must be absolute, and it cannot point at files users never get.
      const readme = files.get("README.md")?.toString() ?? "";
      expect(readme.match(/\]\((?!https?:|#)[^)]*\)/g) ?? [], `${tarball.name}: relative links in README.md`).toEqual([]);
      expect(readme.match(/(?<![\w/.-])test\/[\w./-]+/g) ?? [], `${tarball.name}: README.md mentions test files`).toEqual([]);
    }
  });

  it("every source map resolves inside its tarball: each source it names is shipped or embedded", () => {
    // A map whose sources point outside the package (the CLI bundle's chunks once named
    // ../wire/src/…) sends a debugger or a stack-trace tool to files nobody installed.
    for (const tarball of tarballs) {
      const files = tarballFiles(tarball.file);
      const maps = [...files.keys()].filter((file) => file.endsWith(".map"));
      const dangling: string[] = [];
      for (const mapFile of maps) {
        const map = JSON.parse(files.get(mapFile)!.toString()) as {
          sources: string[];
          sourceRoot?: string;
          sourcesContent?: (string | null)[];
        };
        map.sources.forEach((source, index) => {
          if (typeof map.sourcesContent?.[index] === "string") return;
          const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(mapFile), map.sourceRoot ?? "", source));
          if (!files.has(resolved)) dangling.push(`${mapFile} → ${source}`);
        });
      }
      expect(maps.length, `${tarball.name}: source maps`).toBeGreaterThan(0);
      expect(dangling.slice(0, 5), `${tarball.name}: ${dangling.length} dangling sources`).toEqual([]);
    }
  });

  it("publint reports no error or warning for any of them", async () => {
    for (const tarball of tarballs) {
      const data = readFileSync(tarball.file);
      const { messages } = await publint({
        pack: { tarball: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) },
        level: "warning",
      });
      expect(
        messages.map((message) => `${message.type} ${message.code} ${message.path.join(".")}`),
        tarball.name,
      ).toEqual([]);
    }
  });

  // Two kinds of finding are intended. CJSResolvesToESM is how these packages support CommonJS:
  // Node >= 20.19 require()s ESM, and TypeScript >= 5.8 types it under `module: nodenext`
  // (types.cts below checks exactly that). And TypeScript's legacy `node10` resolution, which
  // predates exports maps, is not supported (it finds the root entry only).
  it("@arethetypeswrong finds no problem in any of them but the intended ones", async () => {
    for (const tarball of tarballs) {
      const result = await checkPackage(createPackageFromTarballData(new Uint8Array(readFileSync(tarball.file))));
      const problems = "problems" in result ? result.problems : [];
      expect(result.types, tarball.name).not.toBe(false);
      expect(
        problems
          .filter((problem) => problem.kind !== "CJSResolvesToESM" && !("resolutionKind" in problem && problem.resolutionKind === "node10"))
          .map((problem) => JSON.stringify(problem)),
        tarball.name,
      ).toEqual([]);
    }
  });
});

describe("installed alone with npm", () => {
  it("the client, the CLI and the conformance kit bring no native module and no server", () => {
    for (const consumer of ["client", "cli", "conformance"] as const) {
      for (const absent of ["better-sqlite3", "@golem-stream/server", "@golem-stream/store-postgres", "pg"]) {
        expect(existsSync(path.join(dir(consumer), "node_modules", absent)), `${consumer} installed ${absent}`).toBe(false);
      }
    }
  });

  it("the client calls the installed server from ESM and from CommonJS (require)", async () => {
    expect(await node("client", "invoke.mjs", serverUrl)).toBe("esm: cba olléh\nesm typed: cba olléh\n");
    expect(await node("client", "invoke.cjs", serverUrl)).toBe("cjs: cba olléh\n");
  });

  it("the PostgreSQL store installs without SQLite (npm install --omit=optional), and loads", async () => {
    expect(existsSync(path.join(dir("store-postgres"), "node_modules", "@golem-stream", "server")), "the server's store contract").toBe(
      true,
    );
    expect(existsSync(path.join(dir("store-postgres"), "node_modules", "better-sqlite3")), "store-postgres installed better-sqlite3").toBe(
      false,
    );
    expect(existsSync(path.join(dir("server"), "node_modules", "better-sqlite3")), "a default install of the server has SQLite").toBe(true);
    expect(await node("store-postgres", "require.cjs")).toMatch(/^required PostgresSessionStore\n$/);
  });

  it("the server and store-postgres load with require()", async () => {
    expect(await node("server", "require.cjs")).toMatch(/^required \d+ exports, keyring generated\n$/);
    expect(await node("store-postgres", "require.cjs")).toMatch(/^required PostgresSessionStore\n$/);
  });

  it("the CLI invokes the installed server and writes contracts for it, and its library entry loads from ESM and CommonJS", async () => {
    const bin = path.join(dir("cli"), "node_modules/.bin/golem-stream");
    const { stdout } = await run(
      bin,
      ["invoke", "echo", "count", "-c", '{"name":"cli"}', "3", "0", "--url", serverUrl, "--token", "s3cret"],
      {
        cwd: dir("cli"),
        env: consumerEnv(),
      },
    );
    // One output stream: bare output, one item per line (the result is the stream itself).
    expect(stdout).toBe("0\n1\n2\n");
    // codegen needs @golem-stream/contract's ./codegen entry from its tarball.
    const generated = await run(bin, ["codegen", "--url", serverUrl, "--token", "s3cret"], { cwd: dir("cli"), env: consumerEnv() });
    expect(generated.stdout).toMatch(/^export const echoContract = defineAgentType\(\{$/m);
    expect(await node("cli", "embed.mjs")).toMatch(/^esm: checkpoint v1, exit codes \d+\n$/);
    expect(await node("cli", "embed.cjs")).toBe("cjs: checkpoint v1\n");
  });

  it(
    "the conformance kit's command and its client adapter run from the installed package",
    async () => {
      const bin = (name: string) => path.join(dir("conformance"), "node_modules/.bin", name);
      const options = { cwd: dir("conformance"), env: consumerEnv() };
      const help = await run(bin("golem-stream-conformance"), ["--help"], options);
      expect(help.stdout).toMatch(/^Usage: golem-stream-conformance/m);
      expect(help.stdout).toMatch(/^\s+server \[options\]/m);
      expect(help.stdout).toMatch(/^\s+client \[options\]/m);
      const listed = await run(bin("golem-stream-conformance"), ["client", "--adapter", "unused", "--list"], options);
      expect(listed.stdout).toMatch(/^takeover\.replaced-by-another-process\t/m);
      expect(existsSync(bin("golem-stream-conformance-client-adapter")), "the client adapter's bin").toBe(true);
      // The installed suite drives the installed adapter (and through it the installed client). What
      // is checked is that the installed pieces work together, not how fast: the waits are set for a
      // loaded machine (each restart starts the adapter anew from node_modules; beside a disk-heavy
      // benchmark the kit's defaults, a 10 s wait, once failed this). A failed scenario exits 1 with
      // the report on stdout, which says what the scenario saw.
      const suite = await run(
        bin("golem-stream-conformance"),
        [
          "client",
          "--adapter",
          bin("golem-stream-conformance-client-adapter"),
          "--only",
          "outputs.in-order-once,restart.resume-from-checkpoint",
          "--timeout",
          String(KIT_WAIT_MS),
          "--check-timeout",
          String(KIT_CHECK_DEADLINE_MS),
          "--json",
        ],
        options,
      ).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: error.stderr ?? "" }));
      expect(suite.stdout, `no JSON report; stderr: ${suite.stderr}`).toMatch(/^\{/);
      const report = JSON.parse(suite.stdout) as { results: { id: string; status: string; saw?: string }[] };
      expect(report.results.map((r) => `${r.id} ${r.status}${r.status === "passed" ? "" : `: ${r.saw ?? ""}`}`)).toEqual([
        "outputs.in-order-once passed",
        "restart.resume-from-checkpoint passed",
      ]);
    },
    3 * KIT_CHECK_DEADLINE_MS,
  );

  it("the CLI's serve says how to install the server it does not have", async () => {
    const bin = path.join(dir("cli"), "node_modules/.bin/golem-stream");
    const failure = await run(bin, ["serve", "--port", "0", "--data-dir", path.join(root, "cli-data")], {
      cwd: dir("cli"),
      env: consumerEnv(),
    }).then(
      () => undefined,
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toContain("golem-stream serve needs @golem-stream/server, which is not installed");
    expect(failure?.stderr).toContain("npm install -g @golem-stream/server");
    expect(existsSync(path.join(root, "cli-data")), "serve created its data directory before failing").toBe(false);
  });

  it("the CLI's serve runs once @golem-stream/server is installed beside it, as that message says", async () => {
    await addDependency(dir("cli"), "@golem-stream/server", tarballs);
    const bin = path.join(dir("cli"), "node_modules/.bin/golem-stream");
    const serve = spawn(bin, ["serve", "--port", "0", "--token", "s3cret", "--data-dir", path.join(root, "cli-data")], {
      cwd: dir("cli"),
      env: consumerEnv(),
    });
    try {
      const url = await listeningUrl(serve, /^listening on (\S+)$/m);
      const { stdout } = await run(bin, ["types", "--url", url, "--token", "s3cret"], { cwd: dir("cli"), env: consumerEnv() });
      expect(stdout).toContain("echo");
      // The web console comes with the CLI (@golem-stream/console, built into its tarball).
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<title>golem-stream console</title>");
    } finally {
      await stop(serve);
    }
  });
});

describe("TypeScript consumers", () => {
  const nodeTypes = path.dirname(path.dirname(require.resolve("@types/node/package.json")));
  const settings = {
    nodenext: { options: { module: "nodenext", moduleResolution: "nodenext" }, files: [".ts", ".cts"] },
    bundler: { options: { module: "esnext", moduleResolution: "bundler" }, files: [".ts"] },
  } as const;

  for (const consumer of CONSUMERS) {
    for (const [mode, { options, files }] of Object.entries(settings)) {
      it(`${consumer} type-checks under ${mode}, its dependencies' declarations included (no skipLibCheck)`, () => {
        const compilerOptions = {
          target: "es2022",
          lib: ["es2023"],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
          typeRoots: [nodeTypes],
          ...options,
        };
        expect(typeCheck(dir(consumer), compilerOptions, files)).toBe("");
      });
    }
  }
});

describe("public types", () => {
  const entries: Record<Consumer, Record<string, string[]>> = {
    client: {
      "@golem-stream/client": ["@golem-stream/client"],
      "@golem-stream/wire": ["@golem-stream/wire"],
      "@golem-stream/schema-value": ["@golem-stream/schema-value"],
    },
    server: {
      "@golem-stream/server": [
        "@golem-stream/server",
        "@golem-stream/server/store",
        "@golem-stream/server/demo",
        "@golem-stream/server/testing",
      ],
      "@golem-stream/tokens": ["@golem-stream/tokens"],
    },
    cli: { "@golem-stream/cli": ["@golem-stream/cli"] },
    "store-postgres": { "@golem-stream/store-postgres": ["@golem-stream/store-postgres", "@golem-stream/store-postgres/local"] },
    conformance: { "@golem-stream/conformance": ["@golem-stream/conformance", "@golem-stream/conformance/client-adapter"] },
  };
  for (const consumer of CONSUMERS) {
    for (const [name, entryPoints] of Object.entries(entries[consumer])) {
      it(`every type in ${name}'s signatures is importable from it`, () => {
        expect(unexportedPublicTypes(dir(consumer), name, entryPoints)).toEqual([]);
      });
    }
  }
});
