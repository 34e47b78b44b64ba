/**
 * The certificate `serve --tls-cert` takes, at start and on each reload:
 * one every client would refuse for its dates is refused first, saying
 * when it expired (or becomes valid), with the clock it was checked by.
 * An encrypted key is decrypted by the first line of
 * `--tls-key-passphrase-file`; without it, or with a wrong one, the error
 * says what to give.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { createSecureContext } from "node:tls";
import { makeTestCertificates } from "@golem-stream/test-support";
import { afterAll, describe, expect, it } from "vitest";
import { readServeTls } from "../src/commands/serve-tls.js";

const certificates = makeTestCertificates();
afterAll(() => certificates.remove());
const { cert, key } = certificates.issue("dated");
const files = { cert: join(certificates.directory, "dated.crt"), key: join(certificates.directory, "dated.key") };
const { validFrom, validTo } = new X509Certificate(cert);
const DAY = 86_400_000;

describe("serve's certificate, by its dates", () => {
  it("is taken within them", async () => {
    const tls = await readServeTls(files, new Date(new Date(validFrom).getTime() + 60_000));
    expect(tls.credentials).toEqual({ cert, key });
    expect(tls.description).toContain(`valid until ${new Date(validTo).toISOString()}`);
  });

  it("is refused once expired, naming the file and the date", async () => {
    await expect(readServeTls(files, new Date(new Date(validTo).getTime() + DAY))).rejects.toMatchObject({
      exitCode: 2,
      message: `--tls-cert ${files.cert}: expired on ${new Date(validTo).toISOString()}: every client would refuse it (CERT_HAS_EXPIRED); give the renewed one`,
    });
  });

  it("is refused before it is valid, with the clock it was checked by", async () => {
    const now = new Date(new Date(validFrom).getTime() - DAY);
    await expect(readServeTls(files, now)).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringContaining(
        `not valid before ${new Date(validFrom).toISOString()} (this machine's clock says ${now.toISOString()})`,
      ),
    });
  });
});

describe("an encrypted key", () => {
  const encrypted = join(certificates.directory, "dated.encrypted.key");
  writeFileSync(
    encrypted,
    createPrivateKey(key).export({ format: "pem", type: "pkcs8", cipher: "aes-256-cbc", passphrase: "open sesame" }),
    { mode: 0o600 },
  );
  const passphraseFile = (text: string): string => {
    const path = join(certificates.directory, `passphrase-${text.length}-${text.endsWith("\n") ? "nl" : "no"}`);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  const within = new Date(new Date(validFrom).getTime() + 60_000);

  it("is taken with the passphrase file's first line, its line ending left out", async () => {
    // What follows the first line is not read, however long; a byte-order mark an editor wrote is no part of it.
    const comment = `# ${"x".repeat(2000)}\n`;
    for (const text of ["open sesame", "open sesame\n", "open sesame\r\n", `open sesame\n${comment}`, "\uFEFFopen sesame\n"]) {
      const tls = await readServeTls({ ...files, key: encrypted, passphrase: passphraseFile(text) }, within);
      expect(tls.credentials).toMatchObject({ cert, passphrase: "open sesame" });
    }
  });

  it("without a passphrase file is refused, naming the flag that gives one", async () => {
    await expect(readServeTls({ ...files, key: encrypted }, within)).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringContaining(
        `--tls-key ${encrypted}: an encrypted key: give its passphrase in a file, --tls-key-passphrase-file FILE (its first line)`,
      ),
    });
  });

  it("with a wrong passphrase is refused naming the passphrase file, also when the wrong decryption passes the padding check", async () => {
    // A wrong passphrase mostly fails OpenSSL's padding check (bad decrypt); about one in 250
    // encryptions decrypts under it to bytes that pass it and fail to decode instead. Found here
    // by trying encryptions of the key (a few hundred milliseconds); each is said the same way.
    const wrongPassphrase = "open sesam";
    let decoderFailure: string | undefined;
    for (let attempt = 0; attempt < 5000 && decoderFailure === undefined; attempt++) {
      const pem = createPrivateKey(key).export({ format: "pem", type: "pkcs8", cipher: "aes-256-cbc", passphrase: "open sesame" });
      try {
        createSecureContext({ key: pem, passphrase: wrongPassphrase });
      } catch (error) {
        if (!/bad decrypt/.test((error as Error).message)) decoderFailure = pem.toString();
      }
    }
    expect(decoderFailure, "an encryption whose wrong decryption passes the padding check").toBeDefined();
    const unlucky = join(certificates.directory, "dated.unlucky.key");
    writeFileSync(unlucky, decoderFailure!, { mode: 0o600 });
    const wrong = passphraseFile(`${wrongPassphrase}\n`);
    for (const keyFile of [encrypted, unlucky]) {
      await expect(readServeTls({ ...files, key: keyFile, passphrase: wrong }, within)).rejects.toMatchObject({
        exitCode: 2,
        message: expect.stringContaining(`--tls-key ${keyFile}: the passphrase in --tls-key-passphrase-file ${wrong} does not decrypt it`),
      });
    }
  });

  it("with an empty first line or one longer than OpenSSL reads is refused, naming the passphrase file", async () => {
    const empty = passphraseFile("\nopen sesame\n");
    await expect(readServeTls({ ...files, key: encrypted, passphrase: empty }, within)).rejects.toMatchObject({
      exitCode: 2,
      message: `--tls-key-passphrase-file ${empty}: its first line is empty; it is the key's passphrase`,
    });
    const long = passphraseFile(`${"y".repeat(1024)}\n`);
    await expect(readServeTls({ ...files, key: encrypted, passphrase: long }, within)).rejects.toMatchObject({
      exitCode: 2,
      message: `--tls-key-passphrase-file ${long}: its first line is longer than OpenSSL's 1023 bytes, not a passphrase`,
    });
  });
});
