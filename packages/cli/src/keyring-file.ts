/**
 * The keyring file `serve` signs and verifies tokens with: by default
 * `<data-dir>/keyring.json`, or the shared file `--keyring` names (every
 * node of a cluster needs the same keys). Created on first use, owner-only,
 * atomically: when several nodes start at once on a missing file, exactly
 * one creates it and all of them use its keys.
 */
import { randomBytes } from "node:crypto";
import { link, open, readFile, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Keyring } from "@golem-stream/tokens";
import { usageError } from "./exit-codes.js";
import { makeDirectory } from "./make-directory.js";

export const KEYRING_FILE = "keyring.json";

/**
 * One line naming the key that signs and the others by role (key ids are not secret), so an
 * operator rolling a rotation through a cluster sees which step each node has reached.
 */
export function describeKeyRoles(keyring: Keyring): string {
  const others = (role: "staged" | "verify-only") => keyring.keyIds.filter((id) => keyring.roleOf(id) === role);
  const rest = [
    ...(others("staged").length === 0 ? [] : [`staged ${others("staged").join(", ")} (verifies, signs once activated)`]),
    ...(others("verify-only").length === 0 ? [] : [`verify-only ${others("verify-only").join(", ")}`]),
  ];
  return `signing key ${keyring.activeKeyId}${rest.length === 0 ? "" : `; ${rest.join("; ")}`}`;
}

/** Reads `path` as a keyring; undefined when it does not exist. Never quotes the file (it holds secrets). */
export async function readKeyringFile(path: string): Promise<Keyring | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw usageError(`cannot read the keyring ${path}`, error);
  }
  try {
    return Keyring.fromJSON(text);
  } catch (error) {
    throw usageError(`${path} is not a valid keyring: ${error instanceof Error ? error.message : String(error)}`, error);
  }
}

/** The keyring in `path`, created with a fresh key when missing. */
export async function loadOrCreateKeyringFile(path: string): Promise<{ keyring: Keyring; created: boolean }> {
  const existing = await readKeyringFile(path);
  if (existing !== undefined) return { keyring: existing, created: false };
  const directory = dirname(path);
  await makeDirectory(directory, 0o700).catch((error: unknown) => {
    throw usageError(`cannot create the directory of the keyring ${path}`, error);
  });
  const temporary = join(directory, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  let created = false;
  try {
    const file = await open(temporary, "wx", 0o600);
    try {
      await file.writeFile(Keyring.generate().exportKeyringJson());
      await file.sync();
    } finally {
      await file.close();
    }
    // link() never replaces: if another node created the file meanwhile, its keys win.
    await link(temporary, path).then(
      () => (created = true),
      (error: unknown) => {
        if ((error as { code?: unknown }).code !== "EEXIST") throw error;
      },
    );
  } catch (error) {
    throw usageError(`cannot create the keyring ${path}`, error);
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  const keyring = await readKeyringFile(path);
  if (keyring === undefined) throw usageError(`the keyring ${path} disappeared while it was created`);
  return { keyring, created };
}
