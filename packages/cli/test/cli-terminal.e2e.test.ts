/**
 * The CLI as a person meets it: under a pseudo-terminal (util-linux
 * `script`), in a pipe, and when something goes wrong. Real processes.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { BIN, TOKEN, lines, run, scratchDir, start, startServer, track } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";
import { startTcpProxy } from "@golem-stream/test-support";
import { holding, sessions } from "./support/holding-proxy.js";

const ME = ["-c", '{"name":"tty"}'];
let server: ServerProcess;
beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  await server.kill();
});

function hasScript(): boolean {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const shellQuote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * Runs `shell` (a /bin/sh command line) on a pseudo-terminal `columns` wide, `typed` typed on
 * it, and resolves with everything the terminal received, escape sequences included.
 */
function onTerminal(shell: string, columns = 40, typed = ""): Promise<{ code: number | null; screen: string }> {
  if (!hasScript()) throw new Error("these tests need `script` (util-linux) to run the CLI on a pseudo-terminal");
  const child = track(
    spawn("script", ["-qec", `stty cols ${columns} rows 24; ${shell}`, "/dev/null"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", TERM: "xterm", ...server.env },
      stdio: ["pipe", "pipe", "pipe"],
    }),
  );
  let screen = "";
  child.stdout.on("data", (chunk: Buffer) => (screen += chunk.toString("utf8")));
  // What a person types: the terminal holds it until the command reads it.
  child.stdin.end(typed);
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, screen })));
}

const cli = `${shellQuote(process.execPath)} ${shellQuote(BIN)}`;
/** DECAWM off: the terminal would cut every line wider than itself. */
const WRAP_OFF = "\x1b[?7l";

describe("stdout and stderr on the same terminal", () => {
  it("prints output lines whole, never glued to progress, and never turns wrapping off", async () => {
    const dir = scratchDir();
    const wide = "x".repeat(150) + "END";
    writeFileSync(join(dir, "lines.txt"), `${wide}\nshort\n`);
    const { code, screen } = await onTerminal(
      `${cli} invoke echo reverse ${ME.map(shellQuote).join(" ")} - < ${shellQuote(join(dir, "lines.txt"))}`,
    );
    expect(code).toBe(0);
    expect(screen).not.toContain(WRAP_OFF);
    // The 153-character line reached the 40-column terminal in one piece (it wraps there).
    expect(screen).toContain(`DNE${"x".repeat(150)}\r\n`);
    expect(screen).toContain("trohs\r\n");
    // No bar when stdout is the terminal too (as curl does): nothing to glue output lines to.
    expect(screen).not.toMatch(/[←→]/);
  });

  it("draws progress on the terminal when stdout goes elsewhere: bytes for a byte stream, size and percentage of a file on stdin, done at the end", async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, "data.bin"), Buffer.alloc(3 * 1024 * 1024, 7));
    const { code, screen } = await onTerminal(
      `${cli} invoke echo digest ${ME.map(shellQuote).join(" ")} - < ${shellQuote(join(dir, "data.bin"))} > ${shellQuote(join(dir, "out.json"))}`,
      120,
    );
    expect(code).toBe(0);
    expect(screen).not.toContain(WRAP_OFF);
    // The final frame of the input bar: all of it, 100%, a rate, the elapsed time, done.
    expect(screen).toMatch(/→ data \| 3\.0 MiB \/ 3\.0 MiB 100% \| [0-9.]+ (B|KiB|MiB|GiB)\/s \| 0:[0-9]{2} \| done/);
    // Bytes, not "3145728 items".
    expect(screen).not.toMatch(/3145728 items/);
  });
});

describe("input typed on the terminal", () => {
  it("draws no progress while stdin, bound with -, is the terminal a person types on, even with stdout elsewhere", async () => {
    const out = join(scratchDir(), "out.txt");
    // Two lines, then Ctrl-D at the start of a line: the end of the input.
    const { code, screen } = await onTerminal(
      `${cli} invoke echo reverse ${ME.map(shellQuote).join(" ")} - > ${shellQuote(out)}`,
      80,
      "abc\ndef\n\x04",
    );
    expect(code).toBe(0);
    expect(readFileSync(out, "utf8")).toBe("cba\nfed\n");
    expect(screen).not.toMatch(/[←→]/);
  });
});

describe("a server that is down, on a terminal", () => {
  it("one line says so, a single line counts down to each attempt, and it is removed before the final message", async () => {
    const checkpoint = join(scratchDir(), "c.ckpt");
    expect((await run(["invoke", "echo", "count", ...ME, "2", "0", "--checkpoint", checkpoint], { env: server.env })).code).toBe(
      EXIT.success,
    );
    const { code, screen } = await onTerminal(`${cli} resume ${shellQuote(checkpoint)} --url http://127.0.0.1:9 --retries 3`, 120);
    expect(code).toBe(EXIT.connectionLost);
    expect(screen.match(/cannot reach the server/g)).toHaveLength(1);
    expect(screen).toMatch(/\r\x1b\[Kgolem-stream: attempt 3 of 3 in \ds \(/);
    // The countdown line is cleared, then the outcome is a line of its own, with what is left and how to go on.
    expect(screen).toMatch(
      /\r\x1b\[Kgolem-stream: connection lost: gave up after 3 reconnect attempts without progress \(last: [^\r]*\)\. The invocation may keep running on the server: `[^`\r]* resume [^`\r]*c\.ckpt'? --url http:\/\/127\.0\.0\.1:9` continues it\r\n/,
    );
  });
});

describe("bare output for a single output stream", () => {
  it("reverse in a pipe: one line per item, no envelope, nothing else on stdout or stderr", async () => {
    const result = await run(["invoke", "echo", "reverse", ...ME, "-"], { env: server.env, stdin: "abc\nδεζ\n" });
    expect(result.code).toBe(EXIT.success);
    expect(result.stdout.toString()).toBe("cba\nζεδ\n");
    expect(result.stderr).toBe("");
  });

  it("a stream of numbers is one JSON value per line; --output lines keeps the envelope and the result", async () => {
    const bare = await run(["invoke", "echo", "count", ...ME, "3", "0"], { env: server.env });
    expect(bare.stdout.toString()).toBe("0\n1\n2\n");
    const enveloped = await run(["invoke", "echo", "count", ...ME, "3", "0", "--output", "lines"], { env: server.env });
    expect(lines(enveloped.stdout)).toEqual([
      '{"stream":"$","item":0}',
      '{"stream":"$","item":1}',
      '{"stream":"$","item":2}',
      '{"result":"$"}',
    ]);
  });

  it("a stream of binary items is raw bytes; several streams keep the envelope", async () => {
    const blobs = await run(["invoke", "echo", "blobs", ...ME, "2", "5"], { env: server.env });
    expect(blobs.code).toBe(EXIT.success);
    expect(blobs.stdout.length).toBe(10);
    const split = await run(["invoke", "echo", "split", ...ME, "-"], { env: server.env, stdin: "a b\n" });
    expect(lines(split.stdout).at(-1)).toBe('{"result":{"upper":"$.upper","lines":"$.lines"}}');
    expect(lines(split.stdout)).toContain('{"stream":"$.lines","item":"a b"}');
  });
});

describe("resume reading its checkpoint from the terminal", () => {
  it("waits for what is typed or pasted into /dev/stdin, and judges that, instead of failing at once", () => {
    // Not a checkpoint: what matters is that it was waited for and read (then refused as such).
    const printed = execFileSync(
      "python3",
      [join(import.meta.dirname, "fixtures", "tty-stdin.py"), '{"not":"a checkpoint"}', process.execPath, BIN, "resume", "/dev/stdin"],
      { encoding: "utf8" },
    ).split("\n");
    expect(printed[0]).toBe("reading");
    expect(printed[1]).toBe(String(EXIT.usage));
    expect(printed.slice(2).join("\n")).toContain("/dev/stdin is not a usable checkpoint");
  });
});

describe("errors a person can act on", () => {
  it.each([
    [
      "invalid JSON, said once",
      ["-c", "{nam", "1", "0"],
      /^golem-stream: --constructor is not valid JSON: expected a record\{name: string\}, e.g. '\{"name":"text"\}'\n$/,
    ],
    [
      "an argument, said once",
      ["-c", '{"name":"x"}', "{x", "0"],
      /^golem-stream: argument 1 \(to\) is not valid JSON: expected a u32, e.g. 3\n$/,
    ],
    ["an unknown field, by name", ["-c", '{"nam":"x"}', "1", "0"], /^golem-stream: --constructor: unknown field "nam" \(fields: name\)\n$/],
    ["a missing field, by name", ["-c", "{}", "1", "0"], /^golem-stream: --constructor: missing field "name"\n$/],
    ["a wrong type, where it was written", ["-c", '{"name":5}', "1", "0"], /^golem-stream: --constructor\.name: expected a string\n$/],
    ["an unknown option, on one line", ["--frobnicate"], /^golem-stream: unknown option '--frobnicate' \(see --help\)\n$/],
  ])("%s", async (_, args, message) => {
    const result = await run(["invoke", "echo", "count", ...args], { env: server.env });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toMatch(message);
  });

  it("says why a connection failed instead of `fetch failed`", async () => {
    const refused = await run(["types", "--url", "http://127.0.0.1:9"], { env: { GOLEM_STREAM_TOKEN: TOKEN } });
    expect(refused.code).toBe(EXIT.connectionLost);
    expect(refused.stderr).not.toMatch(/fetch failed/);
    const dns = await run(["types", "--url", "http://no-such-host.invalid:8080"], { env: { GOLEM_STREAM_TOKEN: TOKEN } });
    expect(dns.stderr).toMatch(/ENOTFOUND|EAI_AGAIN/);
    // The server speaks plain HTTP: a TLS client fails its handshake.
    const tls = await run(["types", "--url", server.url.replace("http:", "https:")], { env: { GOLEM_STREAM_TOKEN: TOKEN } });
    expect(tls.stderr).toMatch(
      /^golem-stream: cannot reach https:\/\/127\.0\.0\.1:\d+: wrong version number \(ERR_SSL_WRONG_VERSION_NUMBER\): the server may not speak TLS: use http:\/\/ in --url\n$/,
    );
    const port = Number(new URL(server.url).port);
    // --retries 0: a refused connection is otherwise retried (a server restarting), as resume's is.
    const closed = await run(
      ["invoke", "echo", "count", ...ME, "1", "0", "--retries", "0", "--url", `http://127.0.0.1:${port === 65535 ? 65534 : port + 1}`],
      {
        env: { GOLEM_STREAM_TOKEN: TOKEN },
      },
    );
    expect(closed.stderr).toMatch(/ECONNREFUSED/);
  });

  it("the failed event of --output json carries the code", async () => {
    const checkpoint = join(scratchDir(), "c.ckpt");
    expect((await run(["invoke", "echo", "count", ...ME, "2", "0", "--checkpoint", checkpoint], { env: server.env })).code).toBe(
      EXIT.success,
    );
    // resume goes straight to the session endpoint, which refuses the token with a public code.
    const result = await run(["resume", checkpoint, "--output", "json", "--token", "not-the-token"], { env: server.env });
    expect(result.code).toBe(EXIT.rejected);
    const failed = lines(result.stdout)
      .map((line) => JSON.parse(line) as { event: string; code?: string; message?: string })
      .find((e) => e.event === "failed");
    expect(failed?.code).toMatch(/^[a-z]+(-[a-z]+)*$/);
    expect(failed?.message).toContain(`(${failed?.code})`);
  });

  it("--timeout bounds the wait for the server's answer to the start; --retries how often it is sent again", async () => {
    const proxy = await startTcpProxy({ upstream: server.url, plan: holding("answers") });
    try {
      // The proxy passes the handshake and the start, then holds every answer: none arrives, ever.
      const result = await run(["invoke", "echo", "count", ...ME, "1", "0", "--timeout", "300ms", "--retries", "1"], {
        env: { ...server.env, GOLEM_STREAM_URL: proxy.origin },
      });
      expect(result.code).toBe(EXIT.connectionLost);
      expect(result.stderr, result.stderr).toMatch(/no answer to invocationStart within 300 ms/);
      expect(result.stderr).toMatch(/gave up after 1 reconnect attempt without progress/);
      expect(sessions(proxy)).toBe(2);
    } finally {
      await proxy.close();
    }
  });

  it("resume against a server that is down says so once, then retries quietly until --retries", async () => {
    const dir = scratchDir();
    const checkpoint = join(dir, "c.ckpt");
    const done = await run(["invoke", "echo", "count", ...ME, "2", "0", "--checkpoint", checkpoint], { env: server.env });
    expect(done.code).toBe(EXIT.success);
    const down = start(["resume", checkpoint, "--url", "http://127.0.0.1:9", "--retries", "3"], { env: { GOLEM_STREAM_TOKEN: TOKEN } });
    const result = await down.done;
    expect(result.code).toBe(EXIT.connectionLost);
    expect(result.stderr.match(/cannot reach the server/g)).toHaveLength(1);
    expect(result.stderr).toMatch(/retrying quietly, up to 3 times \(--retries\)/);
    expect(result.stderr).toMatch(/gave up after 3 reconnect attempts/);
    expect(lines(result.stderr)).toHaveLength(2);
  });
});
