import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { GENERATED_TOKEN_FILE, checkBearerToken, resolveServeTokens, staticTokens } from "../src/bearer-tokens.js";
import { httpOriginOf, resolveConnection } from "../src/connection.js";
import { CliError, EXIT } from "../src/exit-codes.js";
import type { CliIo } from "../src/io/cli-io.js";
import { createLogger } from "../src/io/logger.js";
import { createProgress } from "../src/io/progress.js";
import { describeProgress, formatBytes, formatClock } from "../src/io/progress-line.js";
import { scratchDir } from "./support/processes.js";
import type { ProgressState } from "../src/io/progress-line.js";
import { defaultDataDir } from "../src/paths.js";
import { parseDuration } from "../src/duration.js";

function fakeIo(stderrIsTty: boolean, stdoutIsTty = false, env: CliIo["env"] = {}): { io: CliIo; stderr: () => string } {
  const stderr = new PassThrough() as PassThrough & { isTTY?: boolean };
  stderr.isTTY = stderrIsTty;
  const stdout = new PassThrough() as PassThrough & { isTTY?: boolean };
  stdout.isTTY = stdoutIsTty;
  let text = "";
  stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const io: CliIo = { stdin: new PassThrough(), stdout, stderr, env, signal: new AbortController().signal };
  return { io, stderr: () => text };
}

describe("parseDuration (serve --retention)", () => {
  it.each([
    ["1ms", 1],
    ["90s", 90_000],
    ["30m", 1_800_000],
    ["24h", 86_400_000],
    ["7d", 604_800_000],
  ])("%s is %d ms", (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(["", "0s", "00m", "1.5h", "1h30m", "90", "-1s", "1 h", "1H", "1w", " 1s", "1s ", "999999999999999d"])("refuses %j", (text) =>
    expect(parseDuration(text)).toBeUndefined(),
  );
});

describe("defaultDataDir", () => {
  it("uses an absolute XDG_STATE_HOME, else ~/.local/state", () => {
    expect(defaultDataDir({ XDG_STATE_HOME: "/var/state", HOME: "/home/a" })).toBe("/var/state/golem-stream");
    expect(defaultDataDir({ XDG_STATE_HOME: "relative", HOME: "/home/a" })).toBe("/home/a/.local/state/golem-stream");
    expect(defaultDataDir({ HOME: "/home/a" })).toBe("/home/a/.local/state/golem-stream");
  });
});

describe("bearer tokens for serve", () => {
  it("accepts flags, the environment and a token file, without duplicates", async () => {
    const dir = scratchDir();
    const file = join(dir, "tokens.txt");
    writeFileSync(file, "# ops\nfile-token\n\nflag-token\n");
    const { tokens, accounts, generatedFile } = await resolveServeTokens({ flags: ["flag-token"], env: "env-token", file }, dir);
    expect(tokens).toEqual(["flag-token", "env-token", "file-token"]);
    expect(accounts.size).toBe(0);
    expect(generatedFile).toBeUndefined();
  });

  it("groups the token file's ACCOUNT: TOKEN lines into accounts; a token also given by flag keeps the file's account", async () => {
    const dir = scratchDir();
    const file = join(dir, "tokens.txt");
    writeFileSync(file, "team-a: one-token\n  team-a :two-token  \nlone-token\nops.b_c-1: flag-token\n");
    const served = await resolveServeTokens({ flags: ["flag-token"], env: undefined, file }, dir);
    expect(served.tokens).toEqual(["flag-token", "one-token", "two-token", "lone-token"]);
    expect(staticTokens(served)).toEqual([
      { token: "flag-token", account: "ops.b_c-1" },
      { token: "one-token", account: "team-a" },
      { token: "two-token", account: "team-a" },
      "lone-token",
    ]);
  });

  it.each([
    ["token-0123: t", /line 1: an account is 1\.\.64 of/],
    ["has space: t", /line 1: an account is/],
    [": t", /line 1: an account is/],
    ["a: has space", /line 1: a bearer token is/],
    ["# c\na: t\nb: t", /line 3: this token is given in another account/],
    ["t\na: t", /line 2: this token is given in another account/],
  ])("refuses the token file %j as a usage error naming its line", async (text, message) => {
    const dir = scratchDir();
    const file = join(dir, "tokens.txt");
    writeFileSync(file, text);
    const refused = resolveServeTokens({ flags: [], env: undefined, file }, dir);
    await expect(refused).rejects.toThrow(CliError);
    await expect(refused).rejects.toThrow(message);
  });

  it("refuses a token file that holds no token, with no other token beside it, instead of generating one; not beside JWTs", async () => {
    const dir = scratchDir();
    const file = join(dir, "tokens.txt");
    writeFileSync(file, "# every token taken away\n\n");
    await expect(resolveServeTokens({ flags: [], env: undefined, file }, dir)).rejects.toThrow(
      `--token-file ${file} holds no token, and neither --token nor $GOLEM_STREAM_TOKEN gives one`,
    );
    expect(existsSync(join(dir, GENERATED_TOKEN_FILE))).toBe(false);
    expect((await resolveServeTokens({ flags: [], env: "env-token", file }, dir)).tokens).toEqual(["env-token"]);
    expect((await resolveServeTokens({ flags: [], env: undefined, file }, dir, false)).tokens).toEqual([]);
    await expect(resolveServeTokens({ flags: [], env: undefined, file: join(dir, "missing") }, dir)).rejects.toThrow(
      `--token-file ${join(dir, "missing")}: cannot read it (ENOENT)`,
    );
  });

  it("generates one token on first start and keeps it (mode 0600)", async () => {
    const dir = scratchDir();
    const first = await resolveServeTokens({ flags: [], env: undefined, file: undefined }, dir);
    const second = await resolveServeTokens({ flags: [], env: "", file: undefined }, dir);
    expect(first.tokens).toEqual(second.tokens);
    expect(first.generatedFile).toBe(join(dir, GENERATED_TOKEN_FILE));
    expect(readFileSync(join(dir, GENERATED_TOKEN_FILE), "utf8").trim()).toBe(first.tokens[0]);
    expect(statSync(join(dir, GENERATED_TOKEN_FILE)).mode & 0o777).toBe(0o600);
  });

  it.each(["", "has space", "new\nline", "x".repeat(4097), "é"])("refuses %j as a bearer token", (token) => {
    expect(() => checkBearerToken(token, "--token")).toThrow(CliError);
  });
});

describe("connection", () => {
  it("takes flags over the environment over the default", () => {
    expect(
      resolveConnection({ url: "http://a:1", token: "t1" }, { GOLEM_STREAM_URL: "http://b:2", GOLEM_STREAM_TOKEN: "t2" }),
    ).toMatchObject({
      url: "http://a:1",
      token: "t1",
    });
    expect(resolveConnection({}, { GOLEM_STREAM_URL: "ws://b:2", GOLEM_STREAM_TOKEN: "t2" })).toMatchObject({
      httpOrigin: "http://b:2",
      token: "t2",
    });
    expect(resolveConnection({}, { GOLEM_STREAM_TOKEN: "t2" }).url).toBe("http://127.0.0.1:8080");
  });

  it("is a usage error without a token or with a bad URL", () => {
    expect(() => resolveConnection({}, {})).toThrow(/GOLEM_STREAM_TOKEN/);
    expect(() => httpOriginOf("ftp://x")).toThrow(CliError);
    expect(() => httpOriginOf("not a url")).toThrow(CliError);
    expect(httpOriginOf("wss://h:9/some/path")).toBe("https://h:9");
  });
});

describe("logger", () => {
  it("writes the chosen level and above, one line each", () => {
    const { io, stderr } = fakeIo(false);
    const logger = createLogger(io, "warn", () => new Date(0));
    logger.debug("hidden");
    logger.info("hidden");
    logger.warn("careful", { count: 2n, what: "x" });
    logger.error("broken", { error: new Error("boom") });
    expect(stderr()).toBe(
      '{"level":"warn","time":"1970-01-01T00:00:00.000Z","count":"2","what":"x","msg":"careful"}\n' +
        '{"level":"error","time":"1970-01-01T00:00:00.000Z","error":"boom","msg":"broken"}\n',
    );
  });

  it("is readable on a terminal (pino-pretty), and --log-format overrides the choice", () => {
    const terminal = fakeIo(true);
    createLogger(terminal.io, "info", () => new Date(0)).info("session started", { event: "session.start", session: "s-1" });
    // eslint-disable-next-line no-control-regex -- colours on a terminal
    const line = terminal.stderr().replace(/\x1b\[[0-9;]*m/g, "");
    expect(line).not.toMatch(/^\{/);
    expect(line).toMatch(/INFO/);
    expect(line).toMatch(/session started/);
    expect(line).toMatch(/session: "s-1"/);
    const forced = fakeIo(true);
    createLogger(forced.io, "info", () => new Date(0), "json").info("x");
    expect(JSON.parse(forced.stderr())).toEqual({ level: "info", time: "1970-01-01T00:00:00.000Z", msg: "x" });
  });

  it("on a terminal, is coloured unless NO_COLOR is set to something (no-color.org), even with --log-format pretty", () => {
    const log = (env: CliIo["env"]): string => {
      const terminal = fakeIo(true, false, env);
      createLogger(terminal.io, "info", () => new Date(0), "pretty").warn("careful", { event: "x" });
      return terminal.stderr();
    };
    expect(log({})).toContain("\x1b[");
    expect(log({ NO_COLOR: "" })).toContain("\x1b[");
    expect(log({ NO_COLOR: "1" })).not.toContain("\x1b[");
    expect(log({ NO_COLOR: "1" })).toMatch(/WARN.*careful/);
  });

  it("on a terminal, writes the controls and bidi overrides a client or an agent put in a field as escapes", () => {
    const terminal = fakeIo(true);
    const hostile = "a\u009b2Jb\u202ec\u007fd\u001b]0;title\u0007e";
    createLogger(terminal.io, "info", () => new Date(0)).warn("agent failed", { reason: hostile });
    // eslint-disable-next-line no-control-regex -- colours on a terminal
    const line = terminal.stderr().replace(/\x1b\[[0-9;]*m/g, "");
    expect(line).toContain(String.raw`reason: "a\u009b2Jb\u202ec\u007fd\u001b]0;title\u0007e"`);
    // eslint-disable-next-line no-control-regex -- what must not reach the terminal raw
    expect(line).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/u);
  });
});

describe("progress", () => {
  it("draws nothing unless stderr is a terminal", () => {
    const { io, stderr } = fakeIo(false);
    const progress = createProgress(io, true);
    progress.stream("$", "out").add(3, 3000);
    progress.stop();
    expect(stderr()).toBe("");
  });

  it("draws nothing when stdout is a terminal too (output and bars would be glued together)", () => {
    const { io, stderr } = fakeIo(true, true);
    const progress = createProgress(io, true);
    progress.stream("$", "out").add(3, 3000);
    progress.stop();
    expect(stderr()).toBe("");
  });

  it("draws items, bytes, rate and elapsed per stream on a terminal, never turns wrapping off, and can be disabled", () => {
    const terminal = fakeIo(true);
    let clock = 1_000;
    const progress = createProgress(terminal.io, true, () => clock);
    const bar = progress.stream("$.lines", "out");
    bar.add(2, 2048);
    clock += 2_000;
    bar.finish("done");
    progress.stop();
    expect(terminal.stderr()).toMatch(/← \$\.lines \| 2 items, 2\.0 KiB \| 1\.0 items\/s \| 0:02 \| done/);
    // DECAWM off (ESC[?7l) would cut every output line wider than the terminal.
    expect(terminal.stderr()).not.toContain("\x1b[?7l");
    const disabled = fakeIo(true);
    createProgress(disabled.io, false).stream("$", "out").add(1, 1);
    expect(disabled.stderr()).toBe("");
  });

  const state = (over: Partial<ProgressState>): ProgressState => ({
    arrow: "→",
    label: "data",
    unit: "bytes",
    items: 0,
    bytes: 0,
    startedAt: 0,
    note: undefined,
    finishedAt: undefined,
    ...over,
  });

  it("counts bytes, not items, for a byte stream, with percentage and ETA when the size is known", () => {
    expect(describeProgress(state({ items: 3, bytes: 3 * 1024 * 1024 }), 3_000)).toBe(" → data | 3.0 MiB | 1.0 MiB/s | 0:03");
    expect(describeProgress(state({ bytes: 12 << 20, totalBytes: 48 << 20 }), 3_000)).toBe(
      " → data | 12.0 MiB / 48.0 MiB 25% | 4.0 MiB/s | 0:03 | ETA 0:09",
    );
    expect(describeProgress(state({ bytes: 48 << 20, totalBytes: 48 << 20, note: "done", finishedAt: 4_000 }), 9_000)).toBe(
      " → data | 48.0 MiB / 48.0 MiB 100% | 12.0 MiB/s | 0:04 | done",
    );
  });

  it("formats elapsed time as a clock", () => {
    expect([0, 7.9, 754, 3723].map(formatClock)).toEqual(["0:00", "0:07", "12:34", "1:02:03"]);
  });

  it("formats sizes with binary units", () => {
    expect([0, 1023, 1024, 1536 * 1024, 5 * 1024 ** 3].map(formatBytes)).toEqual(["0 B", "1023 B", "1.0 KiB", "1.5 MiB", "5.0 GiB"]);
  });
});

describe("exit codes", () => {
  it("are distinct", () => {
    const codes = Object.values(EXIT);
    expect(new Set(codes).size).toBe(codes.length);
  });
});
