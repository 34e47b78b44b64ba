/**
 * `golem-stream keyring list | rotate | drop`: the signing keys of a `serve`
 * data directory (`keyring.json`). Key ids are printed, secrets never. The
 * server reads the file when it starts, so a change takes effect at the next
 * `serve`; sessions survive that restart.
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Keyring } from "@golem-stream/tokens";
import { canonicalJson } from "@golem-stream/wire";
import { removeStaleTemporaries, replaceFileAtomically } from "../checkpoint/atomic-file.js";
import { EXIT, usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { defaultDataDir } from "../paths.js";

/** The file `startEmbeddedServer` keeps its keyring in. */
const KEYRING_FILE = "keyring.json";

export interface KeyringOptions {
  readonly dataDir?: string;
}

async function load(options: KeyringOptions, io: CliIo): Promise<{ path: string; keyring: Keyring }> {
  const path = join(resolve(options.dataDir ?? defaultDataDir(io.env)), KEYRING_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const missing = (error as { code?: unknown }).code === "ENOENT";
    throw usageError(missing ? `no keyring at ${path}; \`golem-stream serve\` creates one on its first start` : `cannot read ${path}`, error);
  }
  try {
    return { path, keyring: Keyring.fromJSON(text) };
  } catch (error) {
    // The parser's message never quotes the file (it holds secrets).
    throw usageError(`${path} is not a valid keyring: ${error instanceof Error ? error.message : String(error)}`, error);
  }
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
