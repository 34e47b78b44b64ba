/**
 * `golem-stream serve --tls-cert --tls-key` as a real process: it listens on
 * https:// (the banner, the call hint), and `invoke --url https://…` streams
 * through it when the CLI trusts the test's CA (`NODE_EXTRA_CA_CERTS`), and
 * says it cannot verify the certificate when it does not. The two flags go together, and a file
 * that cannot be used is a usage error naming it before anything is
 * created; a key others may read is warned of like the other secrets. An
 * encrypted key is served with `--tls-key-passphrase-file`, a flag the
 * config file takes as well.
 */
import { chmodSync, copyFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, run, scratchDir, startServe } from "./support/processes.js";
import { makeTestCertificates, servedCertificateName, type TestCertificates } from "@golem-stream/test-support";
import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";

let certificates: TestCertificates;
let certFile: string;
let keyFile: string;

beforeAll(() => {
  certificates = makeTestCertificates(scratchDir());
  certificates.issue("served");
  certFile = join(certificates.directory, "served.crt");
  keyFile = join(certificates.directory, "served.key");
});

it("serve --tls-cert --tls-key listens on https://, and invoke --url https://… streams through it trusting the CA", async () => {
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(
    ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--tls-cert", certFile, "--tls-key", keyFile],
    dataDir,
  );
  try {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const banner = server.running.stdout().toString("utf8");
    expect(banner).toContain(`TLS certificate ${certFile} (CN=served, issued by CN=golem-stream-test-ca, valid until `);
    expect(banner).toContain(`export GOLEM_STREAM_URL=${server.url} `);

    const trusting = { GOLEM_STREAM_TOKEN: TOKEN, NODE_EXTRA_CA_CERTS: certificates.caFile };
    const counted = await run(["invoke", "--url", server.url, "echo", "count", "-c", '{"name":"x"}', "50", "0"], { env: trusting });
    expect(counted.code, counted.stderr).toBe(EXIT.success);
    expect(itemsOf(counted.stdout, "$")).toEqual(Array.from({ length: 50 }, (_, i) => i));
    const reversed = await run(["invoke", "--url", server.url, "echo", "reverse", "-c", '{"name":"x"}', "-"], {
      env: trusting,
      stdin: "one\ntwo\nthree\n",
    });
    expect(reversed.code, reversed.stderr).toBe(EXIT.success);
    expect(reversed.stdout.toString("utf8")).toBe("eno\nowt\neerht\n");
    const types = await run(["types", "--url", server.url], { env: trusting });
    expect(types.code, types.stderr).toBe(EXIT.success);
    expect(types.stdout.toString("utf8")).toContain("echo");

    const distrusting = await run(["invoke", "--url", server.url, "echo", "count", "-c", '{"name":"x"}', "1", "0"], {
      env: { GOLEM_STREAM_TOKEN: TOKEN },
    });
    expect(distrusting.code).toBe(EXIT.connectionLost);
    expect(distrusting.stderr).toBe(
      `golem-stream: cannot reach ${server.url}: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE): ` +
        "the server's certificate is not issued by a CA this process trusts; for a private CA, trust its certificate: NODE_EXTRA_CA_CERTS=ca.pem in the command's environment\n",
    );
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});

it("--tls-cert without --tls-key (and the other way round), or a file that cannot be used, is a usage error before anything is created", async () => {
  const dataDir = join(scratchDir(), "never");
  const serve = (...tls: string[]) => run(["serve", "--port", "0", "--token", TOKEN, "--data-dir", dataDir, ...tls]);
  const alone = await serve("--tls-cert", certFile);
  expect(alone.code).toBe(EXIT.usage);
  expect(alone.stderr).toContain("--tls-cert needs --tls-key FILE too");
  const keyAlone = await serve("--tls-key", keyFile);
  expect(keyAlone.code).toBe(EXIT.usage);
  expect(keyAlone.stderr).toContain("--tls-key needs --tls-cert FILE too");

  const notPem = join(certificates.directory, "not-pem.txt");
  writeFileSync(notPem, "hello\n");
  const cases: [string[], string][] = [
    [["--tls-cert", notPem, "--tls-key", keyFile], `--tls-cert ${notPem}: not a certificate in PEM`],
    [["--tls-cert", certFile, "--tls-key", certFile], `--tls-key ${certFile}: not usable as a private key`],
    [
      ["--tls-cert", certFile, "--tls-key", join(certificates.directory, "ca.key")],
      `--tls-key ${join(certificates.directory, "ca.key")}: not the private key of --tls-cert ${certFile}`,
    ],
    [
      ["--tls-cert", join(certificates.directory, "missing.crt"), "--tls-key", keyFile],
      `--tls-cert ${join(certificates.directory, "missing.crt")}: cannot read it (ENOENT)`,
    ],
  ];
  for (const [flags, said] of cases) {
    const refused = await serve(...flags);
    expect(refused.code, refused.stderr).toBe(EXIT.usage);
    expect(refused.stderr).toContain(said);
    expect(refused.stdout.toString("utf8")).toBe("");
  }
  expect(existsSync(dataDir)).toBe(false);
});

it("a TLS key others may read is a WARNING line, and with --strict-permissions a usage error", async () => {
  const shared = join(certificates.directory, "shared.key");
  copyFileSync(keyFile, shared);
  chmodSync(shared, 0o644);
  const dataDir = join(scratchDir(), "state");
  const refused = await run([
    "serve",
    "--port",
    "0",
    "--token",
    TOKEN,
    "--data-dir",
    dataDir,
    "--tls-cert",
    certFile,
    "--tls-key",
    shared,
    "--strict-permissions",
  ]);
  expect(refused.code).toBe(EXIT.usage);
  expect(refused.stderr).toContain(`the TLS key ${shared} is readable by group or others (mode 0644)`);
  const server = await startServe(
    ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--tls-cert", certFile, "--tls-key", shared],
    dataDir,
  );
  try {
    expect(server.running.stdout().toString("utf8")).toContain(`WARNING: the TLS key ${shared} is readable by group or others (mode 0644)`);
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});

it("an encrypted key is served with --tls-key-passphrase-file (from a config file too); without it serve says which flag to give", async () => {
  const encrypted = join(certificates.directory, "served.encrypted.key");
  const key = createPrivateKey(readFileSync(keyFile, "utf8"));
  writeFileSync(encrypted, key.export({ format: "pem", type: "pkcs8", cipher: "aes-256-cbc", passphrase: "s3cret pass" }), { mode: 0o600 });
  writeFileSync(join(certificates.directory, "passphrase"), "s3cret pass\n", { mode: 0o600 });
  const dataDir = join(scratchDir(), "state");
  const refused = await run([
    "serve",
    "--port",
    "0",
    "--token",
    TOKEN,
    "--data-dir",
    dataDir,
    "--tls-cert",
    certFile,
    "--tls-key",
    encrypted,
  ]);
  expect(refused.code).toBe(EXIT.usage);
  expect(refused.stderr).toContain(
    `--tls-key ${encrypted}: an encrypted key: give its passphrase in a file, --tls-key-passphrase-file FILE`,
  );
  // Paths in a config file are relative to it.
  const config = join(certificates.directory, "serve.json");
  writeFileSync(
    config,
    JSON.stringify({ "tls-cert": "served.crt", "tls-key": "served.encrypted.key", "tls-key-passphrase-file": "passphrase" }),
  );
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--config", config], dataDir);
  try {
    expect(await servedCertificateName(server.url, certificates.ca)).toBe("served");
    expect(server.running.stdout().toString("utf8") + server.running.stderr()).not.toContain("s3cret pass");
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
});
