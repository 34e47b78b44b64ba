import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { applyConfigFile } from "../src/commands/serve-config.js";
import { collect, parseCount, parseRetention } from "../src/option-parsers.js";

/** A command shaped like serve's: a path, a switch, a negating switch, a repeatable, parsed values and choices. */
function serveLike(argv: readonly string[]): Command {
  const command = new Command("serve")
    .exitOverride()
    .option("--config <file>")
    .option("--port <port>", "", "8080")
    .option("--data-dir <dir>")
    .option("--token-file <file>")
    .option("--jwt-jwks <url|file>")
    .option("--store <url>")
    .option("--metrics", "", false)
    .option("--no-console")
    .addOption(new Option("--token <token>").argParser(collect).default([]))
    .addOption(new Option("--allow-origin <origin>").argParser(collect).default([]))
    .addOption(new Option("--max-connections <n>").argParser(parseCount(1, 10_000_000)))
    .addOption(new Option("--retention <duration>").argParser(parseRetention).default(86_400_000))
    .addOption(new Option("--log-level <level>").choices(["debug", "info", "warn", "error"]).default("info"))
    .action(() => undefined);
  command.parse(["node", "serve", ...argv]);
  return command;
}

function configFile(json: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "serve-config-"));
  const file = join(dir, "serve.json");
  writeFileSync(file, typeof json === "string" ? json : JSON.stringify(json));
  return file;
}

describe("serve --config", () => {
  it("sets what the flags would, through the flags' own parsers; relative paths from the file's directory", async () => {
    const file = configFile({
      "data-dir": "state",
      "token-file": "/etc/golem/tokens",
      "jwt-jwks": "https://login.example/jwks.json",
      metrics: true,
      console: false,
      "allow-origin": ["https://a.example", "https://b.example"],
      "max-connections": 50,
      retention: "7d",
      "log-level": "warn",
    });
    const command = serveLike([]);
    await applyConfigFile(command, file, {});
    expect(command.opts()).toMatchObject({
      dataDir: join(file, "..", "state"),
      tokenFile: "/etc/golem/tokens",
      jwtJwks: "https://login.example/jwks.json",
      metrics: true,
      console: false,
      allowOrigin: ["https://a.example", "https://b.example"],
      maxConnections: 50,
      retention: 7 * 86_400_000,
      logLevel: "warn",
    });
    expect(command.getOptionValueSource("dataDir")).toBe("config");
  });

  it("a flag on the command line wins, a repeatable one replacing the file's list; the environment's store wins over the file's", async () => {
    const file = configFile({ "data-dir": "state", "allow-origin": ["https://a.example"], store: "postgres://file@db/x", port: 9 });
    const command = serveLike(["--data-dir", "/flag", "--allow-origin", "https://flag.example"]);
    await applyConfigFile(command, file, { GOLEM_STREAM_STORE: "postgres://env@db/x" });
    expect(command.opts()).toMatchObject({ dataDir: "/flag", allowOrigin: ["https://flag.example"], port: "9" });
    expect(command.opts()["store"]).toBeUndefined();
    const withoutEnv = serveLike([]);
    await applyConfigFile(withoutEnv, file, { GOLEM_STREAM_STORE: "" });
    expect(withoutEnv.opts()["store"]).toBe("postgres://file@db/x");
  });

  it.each([
    [{ prot: 8080 }, '"prot" is not an option of serve; did you mean "port"?'],
    [{ "something-else": 1 }, '"something-else" is not an option of serve (see golem-stream serve --help)'],
    [{ "no-console": true }, '"no-console" is not an option of serve; a switch\'s member is its name: "console": false'],
    [{ tokens: ["s3cret"] }, '"tokens" is not an option of serve; bearer tokens go in a token file: "token-file"'],
    ['{"port": 1, "port": 2}', "not strict JSON (it has a duplicate member name)"],
    [{ token: ["s3cret"] }, '"token": bearer tokens go in a token file'],
    [{ config: "other.json" }, '"config": a config file cannot name another'],
    [{ metrics: "yes" }, '"metrics": true or false (a switch), not "yes"'],
    [{ port: true }, '"port": a string or a number, not true'],
    [{ port: [1, 2] }, '"port": one value, not a list'],
    [{ "allow-origin": [{}] }, '"allow-origin": a string or a number, not {}'],
    [{ retention: "7x" }, '"retention": a duration is a positive whole number and a unit'],
    [{ "max-connections": 0 }, '"max-connections":'],
    [{ "log-level": "loud" }, '"log-level": Allowed choices are debug, info, warn, error.'],
    [[1], "a JSON object of serve's options"],
    ["{nope", "not strict JSON"],
  ])("refuses %j naming the file and the member", async (json, message) => {
    const file = configFile(json);
    await expect(applyConfigFile(serveLike([]), file, {})).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringContaining(message),
    });
  });

  it("refuses what is not a readable file of a config's size", async () => {
    const dir = mkdtempSync(join(tmpdir(), "serve-config-"));
    await expect(applyConfigFile(serveLike([]), join(dir, "missing.json"), {})).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringContaining("cannot read it (ENOENT)"),
    });
    await expect(applyConfigFile(serveLike([]), dir, {})).rejects.toMatchObject({ message: expect.stringContaining("not a file") });
    const large = configFile(`{"port": 1${" ".repeat(1024 * 1024)}}`);
    await expect(applyConfigFile(serveLike([]), large, {})).rejects.toMatchObject({
      message: expect.stringContaining("more than a config file's"),
    });
  });
});
