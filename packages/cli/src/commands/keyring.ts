/**
 * `golem-stream keyring list | rotate | drop`: the signing keys of a `serve`
 * data directory (`keyring.json`), or of the keyring file `--keyring` names
 * (the one a cluster's nodes share). Key ids are printed, secrets never. The
 * server reads the file when it starts, so a change takes effect at the next
 * `serve`; sessions survive that restart.
 */
import { join, resolve } from "node:path";
import type { Keyring } from "@golem-stream/tokens";
import { canonicalJson } from "@golem-stream/wire";
import { removeStaleTemporaries, replaceFileAtomically } from "../checkpoint/atomic-file.js";
import { EXIT, usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { KEYRING_FILE, readKeyringFile } from "../keyring-file.js";
import { defaultDataDir } from "../paths.js";

export interface KeyringOptions {
  readonly dataDir?: string;
  /** A keyring file (`serve --keyring`), instead of the data directory's. */
  readonly keyring?: string;
}

async function load(options: KeyringOptions, io: CliIo): Promise<{ path: string; keyring: Keyring }> {
  if (options.keyring !== undefined && options.dataDir !== undefined) throw usageError("give --keyring or --data-dir, not both");
  const path = options.keyring === undefined ? join(resolve(options.dataDir ?? defaultDataDir(io.env)), KEYRING_FILE) : resolve(options.keyring);
  const keyring = await readKeyringFile(path);
  if (keyring === undefined) {
    throw usageError(`no keyring at ${path}; \`golem-stream serve${options.keyring === undefined ? "" : " --keyring <file>"}\` creates one on its first start`);
  }
  return { path, keyring };
}

async function save(path: string, keyring: Keyring): Promise<void> {
  await removeStaleTemporaries(path);
  await replaceFileAtomically(path, keyring.exportKeyringJson());
}

export async function runKeyringList(options: KeyringOptions & { readonly json: boolean }, io: CliIo): Promise<ExitCode> {
  const { keyring } = await load(options, io);
  if (options.json) {
    const keys = keyring.keyIds.map((id) => ({ id, verifyOnly: keyring.isVerifyOnly(id) }));
    io.stdout.write(`${canonicalJson({ active: keyring.activeKeyId, keys })}\n`);
  } else {
    for (const id of keyring.keyIds) io.stdout.write(`${id}\t${keyring.isVerifyOnly(id) ? "verify-only" : "active"}\n`);
  }
  return EXIT.success;
}

export async function runKeyringRotate(options: KeyringOptions & { readonly keyId?: string }, io: CliIo): Promise<ExitCode> {
  const { path, keyring } = await load(options, io);
  let rotated: Keyring;
  try {
    rotated = options.keyId === undefined ? keyring.rotate() : keyring.rotate(options.keyId);
  } catch (error) {
    throw usageError(`cannot rotate: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  await save(path, rotated);
  io.stdout.write(
    `${rotated.activeKeyId}\tactive (new)\n${keyring.activeKeyId}\tverify-only (was active)\n` +
      "Restart `golem-stream serve` to sign new tokens with it; tokens signed before keep verifying.\n",
  );
  return EXIT.success;
}

export async function runKeyringDrop(keyId: string, options: KeyringOptions, io: CliIo): Promise<ExitCode> {
  const { path, keyring } = await load(options, io);
  let dropped: Keyring;
  try {
    dropped = keyring.withoutKey(keyId);
  } catch (error) {
    throw usageError(`cannot drop ${keyId}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  await save(path, dropped);
  io.stdout.write(`dropped ${keyId}: once \`golem-stream serve\` restarts, tokens it signed no longer verify.\n`);
  return EXIT.success;
}
