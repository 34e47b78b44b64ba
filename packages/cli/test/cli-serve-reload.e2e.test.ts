/**
 * `golem-stream serve` reloads on SIGUSR2, as a real process: a token added
 * to `--token-file` is accepted only once the signal was handled
 * (`server.reloaded` in the log) and a removed one is refused from then on,
 * while an invocation running on it runs to its end; a certificate swapped
 * in the `--tls-cert`/`--tls-key` files is the one a new connection is
 * served after the signal. A file that cannot be used changes nothing, the
 * certificate included when only the token file is at fault, and the log
 * says what was wrong (`server.reload-failed`). What a start warns of in
 * those files (a short token, a file others may read) a reload warns of
 * too, and `--strict-permissions` refuses the reload instead. A token file
 * left without a token fails the reload, the tokens in use kept, where a
 * start would fall back to a generated token. A SIGUSR2
 * that arrives while the executable is still loading does not end it: the
 * reload is carried out once it listens.
 */
import { chmodSync, copyFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, start, startServe, waitFor } from "./support/processes.js";
import { events, reload } from "./support/serve-reloads.js";
import { makeTestCertificates, servedCertificateName, type TestCertificates } from "@golem-stream/test-support";

const FIRST_TOKEN = "first-token-0123456789";
const ADDED_TOKEN = "added-token-0123456789";

let certificates: TestCertificates;
beforeAll(() => {
  certificates = makeTestCertificates(scratchDir());
  certificates.issue("first");
  certificates.issue("second");
});

it("SIGUSR2 reads the token file and the certificate again: only then do they apply; a file that cannot be used changes nothing", async () => {
  const dir = certificates.directory;
  const tokenFile = join(dir, "tokens");
  const certFile = join(dir, "tls.crt");
  const keyFile = join(dir, "tls.key");
  writeFileSync(tokenFile, `${FIRST_TOKEN}\n`, { mode: 0o600 });
  copyFileSync(join(dir, "first.crt"), certFile);
  copyFileSync(join(dir, "first.key"), keyFile);
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(
    ["--port", "0", "--token-file", tokenFile, "--tls-cert", certFile, "--tls-key", keyFile, "--data-dir", dataDir, "--log-format", "json"],
    dataDir,
  );
  const env = (token: string) => ({ GOLEM_STREAM_URL: server.url, GOLEM_STREAM_TOKEN: token, NODE_EXTRA_CA_CERTS: certificates.caFile });
  const count = ["invoke", "echo", "count", "-c", '{"name":"x"}'];
  const invokeWith = async (token: string): Promise<number | null> => (await run([...count, "2", "0"], { env: env(token) })).code;
  try {
    expect(await invokeWith(FIRST_TOKEN)).toBe(EXIT.success);
    expect(await invokeWith(ADDED_TOKEN)).toBe(EXIT.rejected);
    expect(await servedCertificateName(server.url, certificates.ca)).toBe("first");

    // An invocation running on the token about to be removed.
    const running = start([...count, "40", "25"], { env: env(FIRST_TOKEN) });
    await waitFor(running, () => running.stdout().length > 0, "the first item");

    writeFileSync(tokenFile, `# the first token is gone\n${ADDED_TOKEN}\n`);
    expect(await invokeWith(ADDED_TOKEN)).toBe(EXIT.rejected);
    expect(await reload(server, "server.reloaded", 1)).toMatchObject({ tokens: 1, certificate: expect.stringContaining("CN=first") });
    expect(await invokeWith(ADDED_TOKEN)).toBe(EXIT.success);
    expect(await invokeWith(FIRST_TOKEN)).toBe(EXIT.rejected);
    const finished = await running.done;
    expect(finished.code, finished.stderr).toBe(EXIT.success);
    expect(itemsOf(finished.stdout, "$")).toHaveLength(40);

    copyFileSync(join(dir, "second.crt"), certFile);
    copyFileSync(join(dir, "second.key"), keyFile);
    expect(await servedCertificateName(server.url, certificates.ca)).toBe("first");
    expect(await reload(server, "server.reloaded", 2)).toMatchObject({ certificate: expect.stringContaining("CN=second") });
    expect(await servedCertificateName(server.url, certificates.ca)).toBe("second");

    // A key that is not the certificate's: nothing changes, and the log says which file.
    copyFileSync(join(dir, "first.key"), keyFile);
    const refused = await reload(server, "server.reload-failed", 1);
    expect(refused).toMatchObject({
      level: "error",
      error: `--tls-key ${keyFile}: not the private key of --tls-cert ${certFile}: error:05800074:x509 certificate routines::key values mismatch`,
    });
    expect(await servedCertificateName(server.url, certificates.ca)).toBe("second");
    expect(await invokeWith(ADDED_TOKEN)).toBe(EXIT.success);

    // A usable certificate beside a token file that is not: neither applies.
    copyFileSync(join(dir, "first.crt"), certFile);
    writeFileSync(tokenFile, `${FIRST_TOKEN}\nnot a token\n`);
    const badTokens = await reload(server, "server.reload-failed", 2);
    expect(badTokens["error"]).toContain(`--token-file ${tokenFile}, line 2: a bearer token is`);
    expect(await servedCertificateName(server.url, certificates.ca)).toBe("second");
    expect(await invokeWith(ADDED_TOKEN)).toBe(EXIT.success);
    expect(await invokeWith(FIRST_TOKEN)).toBe(EXIT.rejected);
    expect(server.running.stderr()).not.toContain(ADDED_TOKEN);
    expect(server.running.stderr()).not.toContain(FIRST_TOKEN);
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});

it("a reload warns of a short token and of a token file others may read, as a start does; with --strict-permissions such a file fails the reload", async () => {
  const tokenFile = join(scratchDir(), "tokens");
  writeFileSync(tokenFile, `${FIRST_TOKEN}\n`, { mode: 0o600 });
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(
    ["--port", "0", "--token-file", tokenFile, "--data-dir", dataDir, "--strict-permissions", "--log-format", "json"],
    dataDir,
  );
  const env = (token: string) => ({ GOLEM_STREAM_URL: server.url, GOLEM_STREAM_TOKEN: token });
  const invokeWith = async (token: string): Promise<number | null> =>
    (await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"], { env: env(token) })).code;
  try {
    expect(events(server, "credentials.weak")).toEqual([]);
    writeFileSync(tokenFile, `${FIRST_TOKEN}\nshort-tok\n`);
    expect(await reload(server, "server.reloaded", 1)).toMatchObject({ tokens: 2 });
    expect(events(server, "credentials.weak").map((record) => record["msg"])).toEqual([
      `a bearer token from --token-file ${tokenFile} has 9 characters, short enough to guess; use 16 or more (the generated one has 32)`,
    ]);
    expect(await invokeWith("short-tok")).toBe(EXIT.success);

    writeFileSync(tokenFile, `${FIRST_TOKEN}\n`);
    chmodSync(tokenFile, 0o644);
    const refused = await reload(server, "server.reload-failed", 1);
    expect(refused["error"]).toBe(
      `the token file ${tokenFile} is readable by group or others (mode 0644): \`chmod 600 ${tokenFile}\` keeps it to you (--strict-permissions: nothing reloaded)`,
    );
    expect(await invokeWith("short-tok")).toBe(EXIT.success);
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});

it("a reload of a token file left without a token fails, keeping the tokens in use, instead of falling back to a generated token", async () => {
  const dir = scratchDir();
  const tokenFile = join(dir, "tokens");
  writeFileSync(tokenFile, `${FIRST_TOKEN}\n`, { mode: 0o600 });
  const dataDir = join(dir, "state");
  const server = await startServe(["--port", "0", "--token-file", tokenFile, "--data-dir", dataDir, "--log-format", "json"], dataDir);
  const invokeWith = async (token: string): Promise<number | null> =>
    (
      await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"], {
        env: { GOLEM_STREAM_URL: server.url, GOLEM_STREAM_TOKEN: token },
      })
    ).code;
  try {
    writeFileSync(tokenFile, "# every token taken away\n");
    server.running.child.kill("SIGUSR2");
    const outcome = (): Record<string, unknown>[] => [...events(server, "server.reloaded"), ...events(server, "server.reload-failed")];
    await waitFor(server.running, () => outcome().length > 0, "the reload's outcome");
    const [refused] = outcome();
    expect(refused).toMatchObject({ event: "server.reload-failed", level: "error" });
    expect(refused!["error"]).toBe(
      `--token-file ${tokenFile} holds no token, and neither --token nor $GOLEM_STREAM_TOKEN gives one: the tokens in use are kept (stop the server to refuse every client)`,
    );
    expect(existsSync(join(dataDir, "bearer-token"))).toBe(false);
    expect(await invokeWith(FIRST_TOKEN)).toBe(EXIT.success);
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});

it("a SIGUSR2 that arrives while the executable still loads its commands does not end serve: the reload is carried out once it listens", async () => {
  const dir = scratchDir();
  const tokenFile = join(dir, "tokens");
  writeFileSync(tokenFile, `${FIRST_TOKEN}\n`, { mode: 0o600 });
  const sent = join(dir, "signal-sent");
  // The preload signals the process as it loads the module defining runCli, before any of it ran
  // (that a signal at Node's own start-up, before the executable's first line, still ends it is
  // beyond any program's reach).
  const preload = new URL("./fixtures/preload/signal-while-loading.mjs", import.meta.url).href;
  const dataDir = join(dir, "state");
  const server = await startServe(["--port", "0", "--token-file", tokenFile, "--data-dir", dataDir, "--log-format", "json"], dataDir, {
    env: { NODE_OPTIONS: `--import=${preload}`, SIGNAL_SENT_FILE: sent },
  });
  try {
    expect(existsSync(sent)).toBe(true);
    await waitFor(server.running, () => events(server, "server.reloaded").length > 0, "the reload");
    const lines = server.running
      .stderr()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => (JSON.parse(line) as Record<string, unknown>)["event"]);
    expect(lines.indexOf("server.reloaded")).toBeGreaterThan(lines.indexOf("server.start"));
    expect(events(server, "server.reloaded")).toEqual([expect.objectContaining({ tokens: 1 })]);
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});
