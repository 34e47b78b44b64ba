/**
 * The deployment's signing keys: one active key that signs new tokens, and
 * verify-only keys that keep older tokens valid through a rotation
 * (protocol section 10.2). A verify-only key may be staged: added ahead of
 * its activation, so that every node of a cluster verifies it before any
 * node signs with it (a rolling rotation, docs/protocol/tokens.md).
 *
 * Secrets live in a module-private WeakMap, not on the instance, so no
 * enumeration, `util.inspect`, `JSON.stringify` or `toString` of a keyring
 * can reach them. `exportKeyringJson()` is the one, explicitly named, place
 * that serialises secrets.
 *
 * Why one file: every operation reads and writes the same module-private secrets table, which is
 * the point of the design above: a second file would need the table exported to it.
 */
import {
  canonicalJson,
  encodeUtf8,
  getMember,
  isJsonObject,
  parseStrictJson,
  isWellFormedText,
  utf8ByteLength,
  LIMITS,
} from "@golem-stream/wire";
import type { JsonObject, JsonValue } from "@golem-stream/wire";
import { decodeBase64Url, encodeBase64Url } from "./base64url.js";
import { argumentFault, readingArguments, usageError } from "./errors.js";
import { PreparedHmac, signaturePrefix } from "./signature.js";
import { TOKEN_KINDS, type TokenKind } from "./types.js";

/**
 * Bounds of a keyring; every one is a deliberate, documented limit. Frozen at
 * run time (`as const` binds only the compiler), so no module can raise one.
 */
export const KEYRING_LIMITS = Object.freeze({
  /** Shortest secret: HMAC-SHA256 keys shorter than the hash output weaken it (RFC 2104 section 3). */
  minSecretBytes: 32,
  /** Longest secret; longer keys are hashed by HMAC anyway, so more adds nothing. */
  maxSecretBytes: 1024,
  /** Most keys in one keyring (active plus verify-only). */
  maxKeys: 256,
  /** Largest keyring file accepted by `Keyring.fromJSON`. */
  maxFileBytes: 1024 * 1024,
  /** Bytes of a freshly generated secret. */
  generatedSecretBytes: 32,
} as const);

/** One key as given to the constructor. */
export interface KeyringKeyInit {
  /** 1..64 UTF-8 bytes; appears in every token it signs (not secret). */
  readonly id: string;
  /** The secret: raw bytes or unpadded base64url text; at least 32 bytes. */
  readonly secret: Uint8Array | string;
  /**
   * Documentation of intent: every key but the active one is verify-only
   * whether or not it says so. Marking the active key verify-only is an error.
   */
  readonly verifyOnly?: boolean | undefined;
  /**
   * A verify-only key waiting to become the active one (`activate`), as
   * opposed to one that signed before. Staging the active key is an error.
   */
  readonly staged?: boolean | undefined;
}

/** What a key does in a keyring (`Keyring.roleOf`). */
export type KeyRole = NonNullable<ReturnType<Keyring["roleOf"]>>;

/** Keyring file versions `fromJSON` reads; `exportKeyringJson` writes 2 only when a key is staged. */
export const KEYRING_FILE_VERSIONS = Object.freeze([1, 2] as const);

export interface KeyringInit {
  /** The id of the key that signs new tokens. */
  readonly active: string;
  readonly keys: readonly KeyringKeyInit[];
}

interface KeyEntry {
  readonly secret: Uint8Array;
  /** The key id as written into every payload it signs, encoded once. */
  readonly keyIdBytes: Uint8Array;
  /** One prepared signer per kind, each with its kind's domain prefix already absorbed. */
  readonly signers: Readonly<Record<TokenKind, PreparedHmac>>;
}

const secrets = new WeakMap<Keyring, ReadonlyMap<string, KeyEntry>>();

const REDACTED = "<redacted>";

export class Keyring {
  /** The key that signs new session and cursor tokens. */
  readonly activeKeyId: string;
  /** Every configured key id, in configuration order. Key ids are not secret. */
  readonly keyIds: readonly string[];
  /** The staged keys: verify-only keys not yet activated, in configuration order. */
  readonly stagedKeyIds: readonly string[];

  constructor(init: KeyringInit) {
    try {
      if (typeof init !== "object" || init === null) throw usageError("a keyring needs { active, keys }", "keyring");
      const { active, keys } = init;
      if (!Array.isArray(keys) || keys.length === 0) throw usageError("a keyring needs at least one key", "keyring.keys");
      if (keys.length > KEYRING_LIMITS.maxKeys) {
        throw usageError(`a keyring holds at most ${KEYRING_LIMITS.maxKeys} keys`, "keyring.keys");
      }
      const entries = new Map<string, KeyEntry>();
      const staged: string[] = [];
      keys.forEach((key: KeyringKeyInit, index: number) => {
        const path = `keyring.keys[${index}]`;
        if (typeof key !== "object" || key === null) throw usageError("a key must be an object", path);
        const id = checkKeyId(key.id, `${path}.id`);
        if (entries.has(id)) throw usageError("key ids must be unique", `${path}.id`);
        if (key.verifyOnly !== undefined && typeof key.verifyOnly !== "boolean") {
          throw usageError("verifyOnly must be a boolean", `${path}.verifyOnly`);
        }
        if (key.verifyOnly === true && id === active) {
          throw usageError("the active key cannot be verify-only", `${path}.verifyOnly`);
        }
        if (key.staged !== undefined && typeof key.staged !== "boolean") throw usageError("staged must be a boolean", `${path}.staged`);
        if (key.staged === true) {
          if (id === active) throw usageError("the active key cannot be staged", `${path}.staged`);
          staged.push(id);
        }
        entries.set(id, prepareKey(id, secretBytes(key.secret, `${path}.secret`)));
      });
      if (typeof active !== "string" || !entries.has(active)) {
        throw usageError("active must name one of the keys", "keyring.active");
      }
      this.activeKeyId = active;
      this.keyIds = Object.freeze([...entries.keys()]);
      this.stagedKeyIds = Object.freeze(staged);
      secrets.set(this, entries);
      Object.freeze(this);
    } catch (cause) {
      // A getter or proxy trap of the caller's init that throws: its mistake, never a raw error.
      throw argumentFault(cause);
    }
  }

  /**
   * Reads a keyring file (see the README for the format): its text, bytes or
   * parsed JSON. Strict: unknown members, a missing member or a wrong type is
   * an error, so a typo cannot silently drop a key.
   */
  static fromJSON(input: string | Uint8Array | JsonValue): Keyring {
    return readingArguments(() => Keyring.#fromJSON(input));
  }

  static #fromJSON(input: string | Uint8Array | JsonValue): Keyring {
    let value: JsonValue;
    if (typeof input === "string" || input instanceof Uint8Array) {
      try {
        value = parseStrictJson(input, { maxBytes: KEYRING_LIMITS.maxFileBytes, what: "keyring" });
      } catch {
        // The parser's error is not attached: its detail could quote the file, which holds secrets.
        throw usageError("the keyring file is not strict JSON of at most 1 MiB", "keyring");
      }
    } else {
      value = input;
    }
    return new Keyring(parseKeyringFile(value));
  }

  /** A new keyring with one freshly generated active key (random 32-byte secret). */
  static generate(keyId: string = randomKeyId()): Keyring {
    return new Keyring({ active: keyId, keys: [{ id: keyId, secret: randomSecret() }] });
  }

  /**
   * A new keyring whose active key is freshly generated, keeping every
   * current key as verify-only. Tokens already issued stay valid and stream
   * tokens keep their key (session field 24). In a cluster, prefer `stage`
   * then `activate`: a node still on the old keyring refuses the new key's
   * tokens until it has it.
   */
  rotate(newKeyId: string = randomKeyId()): Keyring {
    this.#assertNewKeyId(newKeyId);
    return new Keyring({ active: newKeyId, keys: [{ id: newKeyId, secret: randomSecret() }, ...this.#keyInits()] });
  }

  /**
   * A new keyring with a freshly generated staged key: it verifies tokens but
   * signs none until `activate(newKeyId)`. The active key is unchanged. Give
   * every node the staged keyring before any node gets the activated one, and
   * no node refuses a token another signed. One key is staged at a time.
   */
  stage(newKeyId: string = randomKeyId()): Keyring {
    this.#assertNewKeyId(newKeyId);
    if (this.stagedKeyIds.length > 0) {
      throw usageError(`${this.stagedKeyIds[0] ?? ""} is already staged: activate or drop it first`, "keyId");
    }
    return new Keyring({ active: this.activeKeyId, keys: [...this.#keyInits(), { id: newKeyId, secret: randomSecret(), staged: true }] });
  }

  /**
   * A new keyring whose active key is `keyId`, a configured verify-only key
   * (normally the staged one; a former active key to roll back). The key that
   * was active stays, verify-only: tokens it signed keep verifying.
   */
  activate(keyId: string): Keyring {
    const entries = entriesOf(this);
    if (typeof keyId !== "string" || !entries.has(keyId)) throw usageError("no such key in the keyring", "keyId");
    if (keyId === this.activeKeyId) throw usageError("the key is already active", "keyId");
    return new Keyring({
      active: keyId,
      keys: this.#keyInits().map((key) => (key.id === keyId ? { id: key.id, secret: key.secret } : key)),
    });
  }

  /**
   * A new keyring without the verify-only key `keyId`: tokens it signed stop
   * verifying. Drop a key only once every session it signed or pinned is past
   * retention (a staged key, never activated, signed none). The active key
   * cannot be dropped (rotate or activate another first).
   */
  withoutKey(keyId: string): Keyring {
    const entries = entriesOf(this);
    if (typeof keyId !== "string" || !entries.has(keyId)) throw usageError("no such key in the keyring", "keyId");
    if (keyId === this.activeKeyId) throw usageError("the active key cannot be dropped; rotate first", "keyId");
    return new Keyring({ active: this.activeKeyId, keys: this.#keyInits().filter((key) => key.id !== keyId) });
  }

  /**
   * What `keyId` does in this keyring: signs new tokens (`active`), waits to
   * (`staged`, verifies only) or signed before (`verify-only`); undefined when
   * it names no key. (Spelled out rather than named: packages that re-export
   * Keyring need not re-export another type.)
   */
  roleOf(keyId: string): "active" | "staged" | "verify-only" | undefined {
    if (!this.has(keyId)) return undefined;
    if (keyId === this.activeKeyId) return "active";
    return this.stagedKeyIds.includes(keyId) ? "staged" : "verify-only";
  }

  #assertNewKeyId(keyId: string): void {
    if (entriesOf(this).has(keyId)) throw usageError("the new key id is already in the keyring", "keyId");
  }

  /** The current keys as constructor input, staged flags kept. */
  #keyInits(): KeyringKeyInit[] {
    return [...entriesOf(this)].map(([id, entry]) => ({
      id,
      secret: entry.secret,
      ...(this.stagedKeyIds.includes(id) ? { staged: true } : {}),
    }));
  }

  /** True when `keyId` names a configured key (active or verify-only). */
  has(keyId: string): boolean {
    return entriesOf(this).has(keyId);
  }

  /** True when `keyId` names a configured key other than the active one. */
  isVerifyOnly(keyId: string): boolean {
    return keyId !== this.activeKeyId && this.has(keyId);
  }

  /**
   * The keyring file, secrets included: the only serialisation that contains
   * them. Write it with owner-only permissions.
   */
  exportKeyringJson(): string {
    const entries = entriesOf(this);
    const keys: JsonValue[] = [...entries].map(([id, entry]) => {
      const key: JsonObject = { id, secret: encodeBase64Url(entry.secret) };
      if (id !== this.activeKeyId) key["verifyOnly"] = true;
      if (this.stagedKeyIds.includes(id)) key["staged"] = true;
      return key;
    });
    // Version 1 whenever it can say everything, so releases that read only version 1 still read it.
    const version = this.stagedKeyIds.length > 0 ? 2 : 1;
    return `${canonicalJson({ version, active: this.activeKeyId, keys })}\n`;
  }

  /** What `JSON.stringify(keyring)` writes: key ids only. */
  toJSON(): JsonObject {
    return { active: this.activeKeyId, keyIds: [...this.keyIds], secrets: REDACTED };
  }

  toString(): string {
    return `Keyring(active=${this.activeKeyId}, keys=${this.keyIds.length}, secrets=${REDACTED})`;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

function entriesOf(keyring: Keyring): ReadonlyMap<string, KeyEntry> {
  const entries = keyring instanceof Keyring ? secrets.get(keyring) : undefined;
  if (entries === undefined) throw usageError("expected a Keyring", "keyring");
  return entries;
}

/**
 * The prepared signer of `keyId` for `kind`, or undefined when the keyring
 * has no such key. Throws `internal-error` when `keyring` is not a Keyring.
 * Internal to the package: it hands out key-derived state.
 */
export function signerFor(keyring: Keyring, keyId: string, kind: TokenKind): PreparedHmac | undefined {
  return entriesOf(keyring).get(keyId)?.signers[kind];
}

/** Like `signerFor`, with the encoded key id that minting writes into the payload. */
export function mintingKeyFor(
  keyring: Keyring,
  keyId: string,
  kind: TokenKind,
): { readonly signer: PreparedHmac; readonly keyIdBytes: Uint8Array } | undefined {
  const entry = entriesOf(keyring).get(keyId);
  return entry === undefined ? undefined : { signer: entry.signers[kind], keyIdBytes: entry.keyIdBytes };
}

/** Throws unless `keyring` is a Keyring made by this package. */
export function assertKeyring(keyring: unknown): asserts keyring is Keyring {
  entriesOf(keyring as Keyring);
}

function prepareKey(id: string, secret: Uint8Array): KeyEntry {
  const signers = {} as Record<TokenKind, PreparedHmac>;
  for (const kind of TOKEN_KINDS) signers[kind] = new PreparedHmac(secret, signaturePrefix(kind));
  return { secret, keyIdBytes: encodeUtf8(id), signers };
}

function checkKeyId(id: unknown, path: string): string {
  if (typeof id !== "string" || !isWellFormedText(id)) throw usageError("a key id must be a string", path);
  const bytes = utf8ByteLength(id);
  if (bytes < 1 || bytes > LIMITS.maxKeyIdBytes) {
    throw usageError(`a key id must be 1..${LIMITS.maxKeyIdBytes} UTF-8 bytes`, path);
  }
  return id;
}

function secretBytes(secret: unknown, path: string): Uint8Array {
  let bytes: Uint8Array | undefined;
  if (secret instanceof Uint8Array)
    bytes = Uint8Array.from(secret); // a private copy the caller cannot change
  else if (typeof secret === "string" && secret.length <= 2 * KEYRING_LIMITS.maxSecretBytes) {
    // Copied: the decoder may return a view into a buffer shared with other data.
    const decoded = decodeBase64Url(secret);
    bytes = decoded === undefined ? undefined : Uint8Array.from(decoded);
  } else if (typeof secret !== "string") throw usageError("a secret must be bytes or unpadded base64url text", path);
  if (bytes === undefined) throw usageError("a secret must be unpadded base64url text (RFC 4648 section 5)", path);
  if (bytes.length < KEYRING_LIMITS.minSecretBytes || bytes.length > KEYRING_LIMITS.maxSecretBytes) {
    throw usageError(`a secret must be ${KEYRING_LIMITS.minSecretBytes}..${KEYRING_LIMITS.maxSecretBytes} bytes`, path);
  }
  return bytes;
}

const FILE_MEMBERS = new Set(["version", "active", "keys"]);
const KEY_MEMBERS: Readonly<Record<KeyringFileVersion, ReadonlySet<string>>> = {
  1: new Set(["id", "secret", "verifyOnly"]),
  2: new Set(["id", "secret", "verifyOnly", "staged"]),
};

type KeyringFileVersion = (typeof KEYRING_FILE_VERSIONS)[number];

function parseKeyringFile(value: JsonValue): KeyringInit {
  if (!isJsonObject(value)) throw usageError("a keyring file is a JSON object", "keyring");
  rejectUnknownMembers(value, FILE_MEMBERS, "keyring");
  const version = getMember(value, "version");
  if (!KEYRING_FILE_VERSIONS.includes(version as KeyringFileVersion)) {
    throw usageError(`a keyring file has version ${KEYRING_FILE_VERSIONS.join(" or ")}`, "keyring.version");
  }
  const keyMembers = KEY_MEMBERS[version as KeyringFileVersion];
  const active = getMember(value, "active");
  if (typeof active !== "string") throw usageError("active must be a string", "keyring.active");
  const keys = getMember(value, "keys");
  if (!Array.isArray(keys)) throw usageError("keys must be an array", "keyring.keys");
  if (keys.length > KEYRING_LIMITS.maxKeys) {
    throw usageError(`a keyring holds at most ${KEYRING_LIMITS.maxKeys} keys`, "keyring.keys");
  }
  return {
    active,
    keys: keys.map((key, index): KeyringKeyInit => {
      const path = `keyring.keys[${index}]`;
      if (!isJsonObject(key)) throw usageError("a key is a JSON object", path);
      rejectUnknownMembers(key, keyMembers, path);
      const id = getMember(key, "id");
      const secret = getMember(key, "secret");
      const verifyOnly = getMember(key, "verifyOnly");
      const staged = getMember(key, "staged");
      if (typeof id !== "string") throw usageError("id must be a string", `${path}.id`);
      if (typeof secret !== "string") throw usageError("secret must be a string", `${path}.secret`);
      // In the file the flag is not optional documentation: it must be exact,
      // so a file whose `active` was edited without its flags is caught.
      if (verifyOnly !== undefined && verifyOnly !== true) {
        throw usageError("verifyOnly is true or absent", `${path}.verifyOnly`);
      }
      if ((verifyOnly === true) === (id === active)) {
        throw usageError("every key but the active one is marked verifyOnly: true", `${path}.verifyOnly`);
      }
      if (staged !== undefined && staged !== true) throw usageError("staged is true or absent", `${path}.staged`);
      return { id, secret, verifyOnly: verifyOnly === true, staged: staged === true };
    }),
  };
}

function rejectUnknownMembers(object: JsonObject, allowed: ReadonlySet<string>, path: string): void {
  for (const name of Object.keys(object)) {
    // The member name could be anything a file holds; it is not echoed.
    if (!allowed.has(name)) throw usageError("unknown member", path);
  }
}

function randomSecret(): Uint8Array {
  const secret = new Uint8Array(KEYRING_LIMITS.generatedSecretBytes);
  crypto.getRandomValues(secret);
  return secret;
}

function randomKeyId(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return `k-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}
