/**
 * `serve --tls-cert FILE --tls-key FILE [--tls-key-passphrase-file FILE]`:
 * the certificate and key the server's own listener serves HTTPS and
 * `wss://` with, read and checked before anything is created (a usage error
 * naming the file and OpenSSL's reason), and read again the same way on each
 * reload (serve-reload.ts). An encrypted key's passphrase comes from a file,
 * never the command line, which other users of the machine can list.
 */
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import { X509Certificate } from "node:crypto";
import type { TlsCredentials } from "@golem-stream/server";
import { usageError } from "../exit-codes.js";

/** A certificate chain or a key is a few KiB; a larger file is not one. */
const MAX_PEM_FILE_BYTES = 1024 * 1024;
/** OpenSSL reads a PEM passphrase of at most 1023 bytes. */
const MAX_PASSPHRASE_BYTES = 1023;
/** A passphrase file may say more after its first line (a comment); a larger one is no passphrase file. */
const MAX_PASSPHRASE_FILE_BYTES = 64 * 1024;
/** A PEM key encrypted with a passphrase: PKCS#8's, or the traditional format's header. */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: 4,ENCRYPTED/m;

/** The files, as given and resolved against the working directory at start (a reload reads the same paths). */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
  /** `--tls-key-passphrase-file`: the encrypted key's passphrase, its first line. */
  readonly passphrase?: string;
}

/** The credentials read from the files, and the banner's line about them. */
export interface ServeTls {
  readonly credentials: TlsCredentials;
  readonly description: string;
}

/** The files of `--tls-cert` and `--tls-key` (both or neither, a usage error naming the one missing), and of `--tls-key-passphrase-file`. */
export function tlsFilesOf(options: {
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly tlsKeyPassphraseFile?: string;
}): TlsFiles | undefined {
  const { tlsCert, tlsKey, tlsKeyPassphraseFile } = options;
  if (tlsCert === undefined && tlsKey === undefined) {
    if (tlsKeyPassphraseFile !== undefined)
      throw usageError("--tls-key-passphrase-file needs --tls-cert and --tls-key: it decrypts the key");
    return undefined;
  }
  if (tlsKey === undefined) throw usageError("--tls-cert needs --tls-key FILE too: the certificate's private key (PEM)");
  if (tlsCert === undefined) throw usageError("--tls-key needs --tls-cert FILE too: the certificate (PEM), followed by its chain");
  return {
    cert: resolve(tlsCert),
    key: resolve(tlsKey),
    ...(tlsKeyPassphraseFile === undefined ? {} : { passphrase: resolve(tlsKeyPassphraseFile) }),
  };
}

/** The files that hold secrets, for the permission checks of a start and a reload (serve-credential-warnings.ts). */
export function tlsSecretFiles(files: TlsFiles | undefined): { readonly path: string; readonly what: string }[] {
  if (files === undefined) return [];
  return [
    { path: files.key, what: "TLS key" },
    ...(files.passphrase === undefined ? [] : [{ path: files.passphrase, what: "TLS key passphrase file" }]),
  ];
}

/**
 * Reads both files and checks them as the server will use them: a file that
 * cannot be read, is not PEM, a key that is not the certificate's, or a
 * certificate outside its validity at `now` (every client would refuse it:
 * an expired file a renewal hook copied by mistake) is a usage error saying
 * which.
 */
export async function readServeTls(files: TlsFiles, now = new Date()): Promise<ServeTls> {
  const [cert, key, passphrase] = await Promise.all([
    readPem(files.cert, "--tls-cert"),
    readPem(files.key, "--tls-key"),
    files.passphrase === undefined ? undefined : readPassphrase(files.passphrase),
  ]);
  const decrypt = passphrase === undefined ? {} : { passphrase };
  const encrypted = ENCRYPTED_KEY.test(key);
  // Each alone first, so that the error names the file at fault; then together (the key must be the certificate's).
  check({ cert }, `--tls-cert ${files.cert}`, "a certificate", undefined);
  check({ key, ...decrypt }, `--tls-key ${files.key}`, "a private key", { encrypted, passphraseFile: files.passphrase });
  check({ cert, key, ...decrypt }, `--tls-key ${files.key}`, `the private key of --tls-cert ${files.cert}`, undefined);
  checkValidity(cert, `--tls-cert ${files.cert}`, now);
  return { credentials: { cert, key, ...decrypt }, description: describe(files.cert, cert) };
}

/**
 * The passphrase: the file's first line, without its line ending (what `echo secret > file` and
 * an editor write) and without the byte-order mark some editors put first; what follows it is
 * not read. A first line that is empty is refused: an empty passphrase decrypts nothing.
 */
async function readPassphrase(path: string): Promise<string> {
  const flag = "--tls-key-passphrase-file";
  const text = await readBounded(path, flag, MAX_PASSPHRASE_FILE_BYTES, "larger than 64 KiB, not a passphrase file");
  const passphrase = (text.split(/\r?\n/, 1)[0] ?? "").replace(/^\uFEFF/, "");
  if (passphrase === "") throw usageError(`${flag} ${path}: its first line is empty; it is the key's passphrase`);
  if (Buffer.byteLength(passphrase) > MAX_PASSPHRASE_BYTES)
    throw usageError(`${flag} ${path}: its first line is longer than OpenSSL's 1023 bytes, not a passphrase`);
  return passphrase;
}

/** The served certificate (the file's first) must be valid now: clients check its dates as they check its name. */
function checkValidity(pem: string, where: string, now: Date): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch {
    return; // a secure context took it; what X509Certificate cannot read, it cannot date either
  }
  const from = new Date(certificate.validFrom);
  const to = new Date(certificate.validTo);
  if (to.getTime() < now.getTime())
    throw usageError(`${where}: expired on ${to.toISOString()}: every client would refuse it (CERT_HAS_EXPIRED); give the renewed one`);
  if (from.getTime() > now.getTime())
    throw usageError(
      `${where}: not valid before ${from.toISOString()} (this machine's clock says ${now.toISOString()}): every client would refuse it (CERT_NOT_YET_VALID)`,
    );
}

/** How a key is read: whether its PEM is encrypted, and the file its passphrase came from. */
interface KeyDecryption {
  readonly encrypted: boolean;
  readonly passphraseFile: string | undefined;
}

function check(options: SecureContextOptions, where: string, expected: string, key: KeyDecryption | undefined): void {
  try {
    createSecureContext(options);
  } catch (error) {
    throw usageError(`${where}: ${explain(error, expected, key)}`, error);
  }
}

function readPem(path: string, flag: string): Promise<string> {
  return readBounded(path, flag, MAX_PEM_FILE_BYTES, "larger than 1 MiB, not a PEM certificate or key");
}

async function readBounded(path: string, flag: string, maxBytes: number, tooLarge: string): Promise<string> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw usageError(`${flag} ${path}: not a file`);
    if (info.size > maxBytes) throw usageError(`${flag} ${path}: ${tooLarge}`);
    return await readFile(path, "utf8");
  } catch (error) {
    if (error instanceof Error && error.name === "CliError") throw error;
    const code = (error as { code?: unknown }).code;
    throw usageError(`${flag} ${path}: cannot read it${typeof code === "string" ? ` (${code})` : ""}`, error);
  }
}

/**
 * OpenSSL's reason, after what it means for the most common mistakes. An encrypted key that
 * does not decode was not decrypted, whatever the reason says: a wrong passphrase usually gives
 * `bad decrypt`, but now and then the decrypted bytes pass the padding check and fail to decode
 * instead (`DECODER routines::unsupported`).
 */
function explain(error: unknown, expected: string, key: KeyDecryption | undefined): string {
  const reason = error instanceof Error ? error.message : String(error);
  if (/no start line/i.test(reason)) return `not ${expected} in PEM (no matching -----BEGIN line): ${reason}`;
  if (/key values mismatch/i.test(reason)) return `not ${expected}: ${reason}`;
  if (key !== undefined && (key.encrypted || /bad decrypt|bad password|interrupted or cancelled/i.test(reason)))
    return key.passphraseFile === undefined
      ? `an encrypted key: give its passphrase in a file, --tls-key-passphrase-file FILE (its first line): ${reason}`
      : `the passphrase in --tls-key-passphrase-file ${key.passphraseFile} does not decrypt it: ${reason}`;
  return `not usable as ${expected}: ${reason}`;
}

/** `TLS certificate FILE (CN=…, issued by CN=…, valid until …)`: what a person checks after a renewal. */
function describe(path: string, pem: string): string {
  try {
    const certificate = new X509Certificate(pem);
    const name = (text: string): string => text.split("\n").join(", ");
    const until = new Date(certificate.validTo);
    const validUntil = Number.isNaN(until.getTime()) ? certificate.validTo : until.toISOString();
    return `TLS certificate ${path} (${name(certificate.subject)}, issued by ${name(certificate.issuer)}, valid until ${validUntil})`;
  } catch {
    return `TLS certificate ${path}`;
  }
}
