/**
 * Lower-case hex SHA-256, the form of the token fields that carry digests:
 * 20 (agent identity) and 34 (element schema digest).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { encodeUtf8, isWellFormedText } from "@golem-stream/wire";
import { readingArguments, usageError } from "./errors.js";

/** SHA-256 of `input` (bytes, or text hashed as UTF-8) as 64 lower-case hex digits. */
export function sha256Hex(input: Uint8Array | string): string {
  return readingArguments(() => digestHex(input));
}

function digestHex(input: unknown): string {
  if (typeof input === "string") {
    // Lone surrogates would be replaced silently by the encoder, so two
    // different strings could share a digest.
    if (!isWellFormedText(input)) throw usageError("text to hash must be well-formed Unicode", "input");
    return bytesToHex(sha256(encodeUtf8(input)));
  }
  if (!(input instanceof Uint8Array)) throw usageError("expected bytes or a string", "input");
  return bytesToHex(sha256(input));
}
