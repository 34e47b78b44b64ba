/**
 * `golem-stream keyring list | rotate | activate | drop`: the signing keys of
 * a `serve` data directory (`keyring.json`), or of the keyring file
 * `--keyring` names (the one a cluster's nodes share). Key ids are printed,
 * secrets never. A running `serve` reads the file again on SIGUSR2
 * (serve-keyring-reload.ts), or at its next start; sessions survive either.
 * A cluster's nodes take the file one by one, so a cluster rotates in two
 * steps (`rotate --staged`, then `activate`): every node verifies a key
 * before any signs with it.
 */
import { commandName, spellCommands } from "../io/command-name.js";
import { join, resolve } from "node:path";
import type { KeyRole, Keyring } from "@golem-stream/tokens";
import { canonicalJson } from "@golem-stream/wire";
import { removeStaleTemporaries, replaceFileAtomically } from "../checkpoint/atomic-file.js";
import { EXIT, usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { KEYRING_FILE, readKeyringFile } from "../keyring-file.js";
import { defaultDataDir } from "../paths.js";

/** How a running serve is told to read the keyring again (serve-reload.ts); systemd: `systemctl reload`. */
const RELOAD = "kill -USR2 <serve's pid>";

export interface KeyringOptions {
  readonly dataDir?: string;
  /** A keyring file (`serve --keyring`), instead of the data directory's. */
  readonly keyring?: string;
}

async function load(options: KeyringOptions, io: CliIo): Promise<{ path: string; keyring: Keyring }> {
  if (options.keyring !== undefined && options.dataDir !== undefined) throw usageError("give --keyring or --data-dir, not both");
  const path =
    options.keyring === undefined ? join(resolve(options.dataDir ?? defaultDataDir(io.env)), KEYRING_FILE) : resolve(options.keyring);
  const keyring = await readKeyringFile(path);
  if (keyring === undefined) {
    throw usageError(
      `no keyring at ${path}; \`golem-stream serve${options.keyring === undefined ? "" : " --keyring <file>"}\` creates one on its first start`,
    );
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
    const keys = keyring.keyIds.map((id) => ({ id, role: roleOf(keyring, id), verifyOnly: keyring.isVerifyOnly(id) }));
    io.stdout.write(`${canonicalJson({ active: keyring.activeKeyId, keys })}\n`);
  } else {
    for (const id of keyring.keyIds) io.stdout.write(`${id}\t${roleOf(keyring, id)}\n`);
  }
  return EXIT.success;
}

function roleOf(keyring: Keyring, keyId: string): KeyRole {
  const role = keyring.roleOf(keyId);
  if (role === undefined) throw new Error(`keyring.roleOf(${keyId}) of one of its own keys is undefined`);
  return role;
}

/**
 * Loads the keyring, changes it, saves it and prints `report(before, after)`. The library's
 * refusal of the change becomes a usage error that says what was refused; the file is left as it was.
 */
async function update(
  options: KeyringOptions,
  io: CliIo,
  what: string,
  make: (keyring: Keyring) => Keyring,
  report: (before: Keyring, after: Keyring) => string,
): Promise<ExitCode> {
  const { path, keyring } = await load(options, io);
  let changed: Keyring;
  try {
    changed = make(keyring);
  } catch (error) {
    throw usageError(`cannot ${what}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  await save(path, changed);
  io.stdout.write(spellCommands(report(keyring, changed), commandName(io.env, io.executable)));
  return EXIT.success;
}

export async function runKeyringRotate(
  options: KeyringOptions & { readonly keyId?: string; readonly staged: boolean },
  io: CliIo,
): Promise<ExitCode> {
  const { keyId } = options;
  if (options.staged) {
    return update(
      options,
      io,
      "stage a key",
      (keyring) => (keyId === undefined ? keyring.stage() : keyring.stage(keyId)),
      (before, after) => {
        const newKeyId = after.stagedKeyIds[0] ?? "";
        return (
          `${newKeyId}\tstaged (new: verifies tokens, signs none yet)\n${before.activeKeyId}\tactive\n` +
          `Send \`golem-stream serve\` SIGUSR2 or restart it (in a cluster: copy this file to every node and reload each: ${RELOAD}), then\n` +
          `\`golem-stream keyring activate ${newKeyId}\`, copy and reload each again.\n`
        );
      },
    );
  }
  return update(
    options,
    io,
    "rotate",
    (keyring) => (keyId === undefined ? keyring.rotate() : keyring.rotate(keyId)),
    (before, after) =>
      `${after.activeKeyId}\tactive (new)\n${before.activeKeyId}\tverify-only (was active)\n` +
      `Send \`golem-stream serve\` SIGUSR2 (${RELOAD}) or restart it to sign new tokens with it; tokens signed before keep verifying.\n` +
      "In a cluster use `rotate --staged` then `activate` instead: a node still on the old file refuses the new key's tokens.\n",
  );
}

export async function runKeyringActivate(keyId: string, options: KeyringOptions, io: CliIo): Promise<ExitCode> {
  return update(
    options,
    io,
    `activate ${keyId}`,
    (keyring) => keyring.activate(keyId),
    (before) =>
      `${keyId}\tactive (was ${roleOf(before, keyId)})\n${before.activeKeyId}\tverify-only (was active)\n` +
      `Send \`golem-stream serve\` SIGUSR2 (${RELOAD}) or restart it (in a cluster: copy this file to every node and reload each) to sign new tokens with it.\n` +
      `Keep ${before.activeKeyId} until every invocation started before the last node reloaded has finished and --retention has\n` +
      "passed: a session's stream tokens keep its key for the session's whole life.\n",
  );
}

export async function runKeyringDrop(keyId: string, options: KeyringOptions, io: CliIo): Promise<ExitCode> {
  return update(
    options,
    io,
    `drop ${keyId}`,
    (keyring) => keyring.withoutKey(keyId),
    () => `dropped ${keyId}: once \`golem-stream serve\` reloads (SIGUSR2: ${RELOAD}) or restarts, tokens it signed no longer verify.\n`,
  );
}
