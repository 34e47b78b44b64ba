/**
 * What a session's own records count for against its principal's stored
 * bytes (`limits.maxStoredBytesPerPrincipal`), beside its payload bytes.
 *
 * A start stores the caller's selector, configuration and method parameters
 * (each up to a whole text message), and every resume or takeover stores an
 * attempt record that an exact replay must find for as long as the session
 * is retained. Left out of the count, a token holder could fill the disk with
 * starts of large parameters or with a loop of resumes. Every store sums the
 * same formula (`SessionStore.storedBytesByPrincipal`), and the server
 * charges the same amounts as it hands the records over, so a purge gives
 * back what was charged.
 */
import type { SessionRecord } from "./session-store.js";

/**
 * A session's fixed part: its ids, names, session token (at most a few KiB:
 * admission/token-budget.ts), outcome and times. A round figure, not a row's
 * exact size: what matters is that a record is never free.
 */
export const SESSION_RECORD_BYTES = 1024;

/** One attempt record (its id, operation, descriptor digest, session and generation). */
export const ATTEMPT_RECORD_BYTES = 256;

/** The texts of a session that a caller or its agent sizes: summed in UTF-8 bytes. */
export type SessionTexts = Pick<SessionRecord, "agentIdentity" | "idempotencyKey" | "selector" | "config" | "parameters" | "result">;

/** A session's record as counted: its fixed part and its texts (the result once it has one). */
export function sessionRecordBytes(record: SessionTexts): number {
  return (
    SESSION_RECORD_BYTES +
    utf8Length(record.agentIdentity) +
    utf8Length(record.idempotencyKey) +
    utf8Length(record.selector) +
    utf8Length(record.config) +
    utf8Length(record.parameters) +
    (record.result === undefined ? 0 : utf8Length(record.result))
  );
}

/** The bytes a result adds to its session's record. */
export function resultRecordBytes(result: string): number {
  return utf8Length(result);
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, "utf8");
}
