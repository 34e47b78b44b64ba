/**
 * `serve --tls-cert FILE --tls-key FILE`: the certificate and key the
 * server's own listener serves HTTPS and `wss://` with, read and checked
 * before anything is created (a usage error naming the file and OpenSSL's
 * reason), and read again the same way on each reload (serve-reload.ts).
 */
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import { X509Certificate } from "node:crypto";
import type { TlsCredentials } from "@golem-stream/server";
import { usageError } from "../exit-codes.js";

/** A certificate chain or a key is a few KiB; a larger file is not one. */
const MAX_PEM_FILE_BYTES = 1024 * 1024;

/** The two files, as given and resolved against the working directory at start (a reload reads the same paths). */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

/** The credentials read from the files, and the banner's line about them. */
export interface ServeTls {
  readonly credentials: TlsCredentials;
  readonly description: string;
}

/** The files of `--tls-cert` and `--tls-key`; both or neither, a usage error naming the one missing. */
export function tlsFilesOf(options: { readonly tlsCert?: string; readonly tlsKey?: string }): TlsFiles | undefined {
  const { tlsCert, tlsKey } = options;
  if (tlsCert === undefined && tlsKey === undefined) return undefined;
  if (tlsKey === undefined) throw usageError("--tls-cert needs --tls-key FILE too: the certificate's private key (PEM)");
  if (tlsCert === undefined) throw usageError("--tls-key needs --tls-cert FILE too: the certificate (PEM), followed by its chain");
  return { cert: resolve(tlsCert), key: resolve(tlsKey) };
}

/**
 * Reads both files and checks them as the server will use them: a file that
 * cannot be read, is not PEM, a key that is not the certificate's, or a
 * certificate outside its validity at `now` (every client would refuse it:
 * an expired file a renewal hook copied by mistake) is a usage error saying
 * which.
 */
export async function readServeTls(files: TlsFiles, now = new Date()): Promise<ServeTls> {
  const [cert, key] = await Promise.all([readPem(files.cert, "--tls-cert"), readPem(files.key, "--tls-key")]);
  // Each alone first, so that the error names the file at fault; then together (the key must be the certificate's).
  check({ cert }, `--tls-cert ${files.cert}`, "a certificate");
  check({ key }, `--tls-key ${files.key}`, "a private key");
  check({ cert, key }, `--tls-key ${files.key}`, `the private key of --tls-cert ${files.cert}`);
  checkValidity(cert, `--tls-cert ${files.cert}`, now);
  return { credentials: { cert, key }, description: describe(files.cert, cert) };
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

function check(options: SecureContextOptions, where: string, expected: string): void {
  try {
    createSecureContext(options);
  } catch (error) {
    throw usageError(`${where}: ${explain(error, expected)}`, error);
  }
}

async function readPem(path: string, flag: string): Promise<string> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw usageError(`${flag} ${path}: not a file`);
    if (info.size > MAX_PEM_FILE_BYTES) throw usageError(`${flag} ${path}: larger than 1 MiB, not a PEM certificate or key`);
    return await readFile(path, "utf8");
  } catch (error) {
    if (error instanceof Error && error.name === "CliError") throw error;
    const code = (error as { code?: unknown }).code;
    throw usageError(`${flag} ${path}: cannot read it${typeof code === "string" ? ` (${code})` : ""}`, error);
  }
}

/** OpenSSL's reason, after what it means for the most common mistakes. */
function explain(error: unknown, expected: string): string {
  const reason = error instanceof Error ? error.message : String(error);
  if (/no start line/i.test(reason)) return `not ${expected} in PEM (no matching -----BEGIN line): ${reason}`;
  if (/key values mismatch/i.test(reason)) return `not ${expected}: ${reason}`;
  if (/bad decrypt|bad password|interrupted or cancelled/i.test(reason))
    return `an encrypted key (serve takes an unencrypted one): ${reason}`;
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
