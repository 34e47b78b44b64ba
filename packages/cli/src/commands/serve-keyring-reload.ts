/**
 * The keyring a SIGUSR2 reload of `serve` reads again (serve-reload.ts), so
 * that a rotation (`golem-stream keyring rotate`, `activate`, `drop`) takes
 * effect without a restart: new tokens are signed with the file's active
 * key, tokens of its other keys keep verifying, and tokens of a key it no
 * longer holds are refused from then on.
 *
 * Refused, with the keyring in use kept: a file that is gone or not a
 * keyring, one that shares no key with the keyring in use (another
 * deployment's keyring, or one generated anew: every token handed out,
 * every session's stream tokens, would be refused at once), and one that
 * gives a key in use another secret (its tokens would no longer verify
 * although the key id still reads as configured). Dropping a key is what
 * `keyring drop` is for, so it is applied, and said in the log, since it
 * ends every token that key signed.
 */
import type { Keyring } from "@golem-stream/tokens";
import { usageError } from "../exit-codes.js";
import { readKeyringFile } from "../keyring-file.js";

/** The keyring file serve signs with, and the keyring it holds now. */
export interface KeyringReloadSource {
  readonly path: string;
  readonly inUse: Keyring;
}

/** A keyring read for a reload: the keyring, and what it changes in words (key ids are not secret). */
export interface ReloadedKeyring {
  readonly path: string;
  readonly keyring: Keyring;
  /** Empty when the file holds the keyring in use. */
  readonly changes: readonly string[];
  /** Keys the file no longer holds: their tokens are refused once it applies. */
  readonly dropped: readonly string[];
}

/** Reads `source.path` and checks it against the keyring in use; a refusal is a usage error naming the file. */
export async function readReloadedKeyring(source: KeyringReloadSource): Promise<ReloadedKeyring> {
  const { path, inUse } = source;
  const keyring = await readKeyringFile(path);
  if (keyring === undefined) throw usageError(`the keyring ${path} is gone: the keyring in use is kept`);
  const before = secretsOf(inUse);
  const after = secretsOf(keyring);
  const kept = [...after.keys()].filter((id) => before.has(id));
  if (kept.length === 0) {
    throw usageError(
      `the keyring ${path} holds none of the keys in use (${inUse.keyIds.join(", ")}): every token handed out would be refused; ` +
        "change it with golem-stream keyring rotate, activate and drop",
    );
  }
  const changedSecret = kept.find((id) => before.get(id) !== after.get(id));
  if (changedSecret !== undefined) {
    throw usageError(
      `the keyring ${path} gives the key ${changedSecret} another secret than the one in use: the tokens it signed would be refused`,
    );
  }
  const dropped = inUse.keyIds.filter((id) => !after.has(id));
  return { path, keyring, changes: changesOf(inUse, keyring, dropped), dropped };
}

/** Each key's secret by id, as the keyring file writes it: compared, never shown. */
function secretsOf(keyring: Keyring): ReadonlyMap<string, string> {
  const file = JSON.parse(keyring.exportKeyringJson()) as { keys: { id: string; secret: string }[] };
  return new Map(file.keys.map((key) => [key.id, key.secret]));
}

function changesOf(before: Keyring, after: Keyring, dropped: readonly string[]): string[] {
  const roleOf = (keyring: Keyring, id: string) => keyring.roleOf(id) ?? "absent";
  const changes: string[] = [];
  if (after.activeKeyId !== before.activeKeyId) changes.push(`signing key ${after.activeKeyId} (was ${before.activeKeyId})`);
  for (const id of after.keyIds) {
    if (id === after.activeKeyId) continue;
    if (!before.has(id)) changes.push(`new ${roleOf(after, id)} key ${id}`);
    else if (roleOf(before, id) !== roleOf(after, id) && id !== before.activeKeyId) changes.push(`${id} now ${roleOf(after, id)}`);
  }
  for (const id of dropped) changes.push(`dropped ${id} (its tokens are refused from now on)`);
  return changes;
}
