/**
 * `serve --pg-*-ms`: the PostgreSQL store's connection time limits on the
 * command line. Bad values are usage errors before anything starts; good
 * ones reach the store, observed on the wire by a stand-in PostgreSQL on
 * loopback that records each startup message (where node-postgres sends
 * `statement_timeout`), lets the client in and never answers a query, so
 * only `--pg-query-timeout-ms` can end the wait (the store's own default is
 * 45 s, longer than this test may take).
 */
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServe, TOKEN } from "./support/processes.js";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

interface SilentPostgres {
  readonly port: number;
  /** The parameters of every startup message received. */
  readonly startups: Record<string, string>[];
}

/** Accepts any startup (AuthenticationOk, ReadyForQuery) and then reads queries without ever answering them. */
async function startSilentPostgres(): Promise<SilentPostgres> {
  const startups: Record<string, string>[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    let buffered = Buffer.alloc(0);
    const readStartup = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 4 || buffered.length < buffered.readInt32BE(0)) return;
      socket.off("data", readStartup);
      const fields = buffered
        .subarray(8, buffered.readInt32BE(0) - 1)
        .toString("utf8")
        .split("\0");
      const params: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) params[fields[i]!] = fields[i + 1]!;
      startups.push(params);
      const authenticationOk = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]);
      const readyForQuery = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);
      socket.write(Buffer.concat([authenticationOk, readyForQuery]));
      socket.resume();
    };
    socket.on("data", readStartup);
  });
  stops.push(async () => {
    // close() waits for open connections: the serve process may still hold one.
    sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => server.close(resolve));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, startups };
}

const serve = (args: readonly string[]) =>
  run(["serve", "--port", "0", "--token", TOKEN, "--keyring", `${scratchDir()}/keyring.json`, "--data-dir", scratchDir(), ...args]);

it("refuses a --pg-*-ms value that is not a whole number of milliseconds from 0, and the flags without --store, with exit 2; a --store-outage-grace that is not 0s or a duration up to 24h", async () => {
  const store = ["--store", "postgres://u@127.0.0.1:1/db"];
  const cases: [string[], RegExp][] = [
    [
      [...store, "--pg-statement-timeout-ms", "-1"],
      /option '--pg-statement-timeout-ms <ms>' argument '-1' is invalid\. milliseconds, a whole number from 0 \(off\) to 2147483647/,
    ],
    [[...store, "--pg-connect-timeout-ms", "1.5"], /--pg-connect-timeout-ms <ms>' argument '1\.5' is invalid/],
    [[...store, "--pg-query-timeout-ms", "30s"], /--pg-query-timeout-ms <ms>' argument '30s' is invalid/],
    [[...store, "--pg-keepalive-initial-delay-ms", "2147483648"], /--pg-keepalive-initial-delay-ms <ms>' argument '2147483648' is invalid/],
    [[...store, "--pg-statement-timeout-ms", "007"], /--pg-statement-timeout-ms <ms>' argument '007' is invalid/],
    [
      ["--pg-statement-timeout-ms", "100", "--pg-query-timeout-ms", "0"],
      /--pg-statement-timeout-ms, --pg-query-timeout-ms only apply to a cluster node: add --store/,
    ],
    [
      [...store, "--store-outage-grace", "5x"],
      /option '--store-outage-grace <duration>' argument '5x' is invalid\. 0s, or a duration up to 24h/,
    ],
    [["--store-outage-grace", "25h"], /--store-outage-grace <duration>' argument '25h' is invalid/],
  ];
  const results = await Promise.all(cases.map(([args]) => serve(args)));
  results.forEach((result, index) => {
    expect(result.code, cases[index]![1].source).toBe(EXIT.usage);
    expect(result.stderr).toMatch(cases[index]![1]);
    expect(result.stdout.toString()).toBe("");
  });
}, 30_000);

it("passes the limits to the store: statement_timeout is sent at connect, and a query never answered fails after --pg-query-timeout-ms", async () => {
  const postgres = await startSilentPostgres();
  const result = await serve([
    "--store",
    `postgres://u@127.0.0.1:${postgres.port}/db`,
    "--pg-statement-timeout-ms",
    "1234",
    "--pg-query-timeout-ms",
    "300",
    "--pg-connect-timeout-ms",
    "20000",
    "--pg-keepalive-initial-delay-ms",
    "0",
  ]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toMatch(/^golem-stream: cannot use the store postgres:\/\/u@127\.0\.0\.1:\d+\/db: .*query-timeout/m);
  expect(postgres.startups.length).toBeGreaterThan(0);
  for (const startup of postgres.startups) expect(startup["statement_timeout"]).toBe("1234");
}, 30_000);

it("--store-outage-grace applies to the SQLite server too: it starts with it", async () => {
  const dataDir = scratchDir();
  const server = await startServe(
    ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--no-console", "--store-outage-grace", "2s"],
    dataDir,
  );
  expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const exit = await server.stop();
  expect(exit.code).toBe(0);
}, 30_000);
